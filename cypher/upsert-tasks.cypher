// Purpose: create or update seed tasks: their source, size, the tools they use,
//   and the adjacent compositions their oracle contains (for "tasks that
//   contain A→B"). Idempotent.
// Parameters: $rows (list of {id, source, category, n_turns, n_steps, tools,
//   tool_pairs: ["a>b"], skill_pairs: ["x>y"], provenance: json string})
// Columns: tasks
UNWIND $rows AS row
MERGE (t:Task {id: row.id})
SET t.source = row.source, t.category = row.category, t.n_turns = row.n_turns,
    t.n_steps = row.n_steps, t.tools = row.tools, t.tool_pairs = row.tool_pairs,
    t.skill_pairs = row.skill_pairs, t.provenance = row.provenance
WITH t, row
CALL (t, row) {
  UNWIND row.tools AS name
  MATCH (x:Tool {name: name})
  MERGE (t)-[:USES]->(x)
  RETURN count(*) AS used
}
RETURN count(t) AS tasks
