// Purpose: recount the prior dependency edges at one level from the stored
//   tasks. Each Task node lists the edges its executed oracle implies
//   (`tool_deps` / `skill_deps`, "from|to|kind", each once per task): kind
//   `data_flow` (an argument carries a value from an earlier output) or
//   `precondition` (a call only works because of state an earlier call set
//   up), found by counterfactual replay. An edge's count is the number of
//   stored tasks that imply it and its example task the smallest such id, so
//   the result depends only on the stored tasks, never on which caller
//   upserted which subset last; an edge no stored task implies any more is
//   removed. Idempotent.
// Parameters: $level ("skill" or "tool")
// Columns: edges, removed
// Mode: write
CALL () {
  MATCH (t:Task)
  UNWIND (CASE $level WHEN 'tool' THEN coalesce(t.tool_deps, []) ELSE coalesce(t.skill_deps, []) END) AS dep
  WITH dep, count(DISTINCT t) AS n, min(t.id) AS example
  RETURN collect({key: dep, n: n, example: example}) AS rows
}
CALL (rows) {
  WITH [r IN rows | r.key] AS keep
  MATCH (a)-[p:PRIOR]->()
  WHERE ((a:Tool AND $level = 'tool') OR (a:Skill AND $level = 'skill')) AND (p.key IS NULL OR NOT p.key IN keep)
  DELETE p
  RETURN count(*) AS removed
}
CALL (rows) {
  UNWIND rows AS row
  WITH row, split(row.key, '|') AS part
  CALL (row, part) {
    WITH row, part WHERE $level = 'tool'
    MATCH (a:Tool {name: part[0]}), (b:Tool {name: part[1]})
    MERGE (a)-[p:PRIOR {kind: part[2]}]->(b)
    SET p.key = row.key, p.count = row.n, p.example_task = row.example, p.provenance = 'oracle counterfactual replay'
    RETURN p
    UNION
    WITH row, part WHERE $level = 'skill'
    MATCH (a:Skill {id: part[0]}), (b:Skill {id: part[1]})
    MERGE (a)-[p:PRIOR {kind: part[2]}]->(b)
    SET p.key = row.key, p.count = row.n, p.example_task = row.example, p.provenance = 'oracle counterfactual replay'
    RETURN p
  }
  RETURN count(p) AS edges
}
RETURN edges, removed
