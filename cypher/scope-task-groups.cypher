// Purpose: the source and category of the tasks one scope's rollouts were
//   made on, with how many of each: `ace synth` takes its seeds from them
//   when no --tasks is given (the scope's environment's own groups).
// Parameters: $scope (string, "experiment/policy/checkpoint"; see `ace scopes`)
// Columns: source, category, tasks
// Mode: read
// Required: scope
// Names: $scope scope
// :params {scope: "demo/sim/round-0"}
MATCH (r:Rollout)-[:OF_TASK]->(t:Task)
WHERE r.scope = $scope
RETURN t.source AS source, t.category AS category, count(DISTINCT t) AS tasks
ORDER BY source, category
