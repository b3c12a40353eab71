// Purpose: prior dependency edges derived from the tasks' executed oracles:
//   `data_flow` (an argument carries a value from an earlier output) and
//   `precondition` (a call only works because of state an earlier call set
//   up), found by counterfactual replay. Counts are set, not added, so this
//   is idempotent.
// Parameters: $level ("skill" or "tool"), $rows (list of {from, to, kind,
//   count, example_task})
// Columns: edges
// Mode: write
UNWIND $rows AS row
CALL (row) {
  WITH row WHERE $level = 'tool'
  MATCH (a:Tool {name: row.from}), (b:Tool {name: row.to})
  MERGE (a)-[p:PRIOR {kind: row.kind}]->(b)
  SET p.count = row.count, p.example_task = row.example_task, p.provenance = 'oracle counterfactual replay'
  RETURN p
  UNION
  WITH row WHERE $level = 'skill'
  MATCH (a:Skill {id: row.from}), (b:Skill {id: row.to})
  MERGE (a)-[p:PRIOR {kind: row.kind}]->(b)
  SET p.count = row.count, p.example_task = row.example_task, p.provenance = 'oracle counterfactual replay'
  RETURN p
}
RETURN count(p) AS edges
