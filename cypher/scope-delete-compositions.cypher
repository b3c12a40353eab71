// Purpose: delete one scope's COMPOSES composition counts, in batches of
//   $batch relationships, each batch its own transaction (auto-commit, as
//   scope-delete). Safe to run again.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $batch (int, relationships per transaction)
// Columns: compositions
// Mode: write
MATCH ()-[c:COMPOSES {scope: $scope}]->()
CALL (c) { DELETE c } IN TRANSACTIONS OF $batch ROWS
RETURN count(*) AS compositions
