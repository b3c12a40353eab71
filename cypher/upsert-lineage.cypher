// Purpose: link synthesized tasks to the plan that produced them and to the
//   seed tasks they were derived from, with strategy, target edge and round.
//   The Task nodes themselves come from upsert-tasks. Idempotent.
// Parameters: $experiment (string), $rows (list of {task, key? (default
//   "ace:" + task), plan, parents,
//   strategy, target, round})
// Columns: tasks
// Mode: write
UNWIND $rows AS row
MATCH (t:Task {key: coalesce(row.key, 'ace:' + row.task)})
SET t.strategy = row.strategy, t.target_edge = row.target, t.round = row.round, t.experiment = $experiment
WITH t, row
OPTIONAL MATCH (p:Plan {id: $experiment + '|' + row.plan})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:PRODUCED]->(t))
WITH t, row
CALL (t, row) {
  UNWIND row.parents AS parent
  MATCH (s:Task {id: parent})
  MERGE (t)-[:DERIVED_FROM]->(s)
  RETURN count(*) AS parents
}
RETURN count(t) AS tasks
