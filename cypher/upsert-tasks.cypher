// Purpose: create or update seed tasks: their source, size, the tools they use,
//   and the adjacent compositions their oracle contains (for "tasks that
//   contain A→B": Task-[:CONTAINS]->Composition {key: "tool:a>b" or
//   "skill:x>y"}), the dependency edges it implies (`tool_deps`,
//   `skill_deps`: ["from|to|kind"], recounted into PRIOR edges by
//   upsert-prior-edges) and its content fingerprint. A task stored before
//   loses the USES and CONTAINS links its new content no longer has.
//   Idempotent.
// Parameters: $rows (list of {id, source, category, n_turns, n_steps, tools,
//   tool_pairs: ["a>b"], skill_pairs: ["x>y"], tool_deps, skill_deps,
//   fingerprint, provenance: json string})
// Columns: tasks
UNWIND $rows AS row
MERGE (t:Task {id: row.id})
SET t.source = row.source, t.category = row.category, t.n_turns = row.n_turns,
    t.n_steps = row.n_steps, t.tools = row.tools, t.tool_pairs = row.tool_pairs,
    t.skill_pairs = row.skill_pairs, t.tool_deps = row.tool_deps, t.skill_deps = row.skill_deps,
    t.fingerprint = row.fingerprint, t.provenance = row.provenance
WITH t, row
// a task stored before with other content: drop the links it no longer has
CALL (t, row) {
  OPTIONAL MATCH (t)-[u:USES]->(x:Tool) WHERE NOT x.name IN row.tools
  DELETE u
  RETURN count(*) AS unused
}
CALL (t, row) {
  WITH t, [p IN row.tool_pairs | 'tool:' + p] + [p IN row.skill_pairs | 'skill:' + p] AS keys
  OPTIONAL MATCH (t)-[k:CONTAINS]->(c:Composition) WHERE NOT c.key IN keys
  DELETE k
  RETURN count(*) AS dropped
}
CALL (t, row) {
  UNWIND row.tools AS name
  MATCH (x:Tool {name: name})
  MERGE (t)-[:USES]->(x)
  RETURN count(*) AS used
}
CALL (t, row) {
  UNWIND [p IN row.tool_pairs | ['tool', p]] + [p IN row.skill_pairs | ['skill', p]] AS lp
  MERGE (c:Composition {key: lp[0] + ':' + lp[1]})
  ON CREATE SET c.level = lp[0], c.from = split(lp[1], '>')[0], c.to = split(lp[1], '>')[1]
  MERGE (t)-[:CONTAINS]->(c)
  RETURN count(*) AS contained
}
RETURN count(t) AS tasks
