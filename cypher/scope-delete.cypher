// Purpose: delete one scope's rollouts with their steps, in batches of
//   $batch rollouts, each batch its own transaction (so a scope of any size
//   fits the server's transaction memory). Run it in an auto-commit
//   transaction (Neo4j Browser does; drivers: session.run) after
//   scope-delete-mark, then scope-delete-compositions and scope-delete-finish.
//   Safe to run again after a kill: it deletes what is left.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $batch (int, rollouts per transaction)
// Columns: rollouts, steps
// Mode: write
MATCH (r:Rollout {scope: $scope})
CALL (r) {
  OPTIONAL MATCH (r)-[:HAS_STEP]->(s:Step)
  WITH r, collect(s) AS steps
  FOREACH (s IN steps | DETACH DELETE s)
  DETACH DELETE r
  RETURN size(steps) AS steps
} IN TRANSACTIONS OF $batch ROWS
RETURN count(*) AS rollouts, coalesce(sum(steps), 0) AS steps
