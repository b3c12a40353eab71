// Purpose: the rollout ids of one scope (each rollout's own id, the part
//   after "experiment/policy/checkpoint/"), for checking a rollout a query
//   is given (ace_graph.names).
// Parameters: $scope (string, "experiment/policy/checkpoint")
// Columns: name
// Mode: read
// Required: scope
// Names: $scope scope
// :params {scope: "demo/sim/round-0"}
MATCH (r:Rollout)
WHERE r.scope = $scope
RETURN r.rollout_id AS name
ORDER BY name
