// Purpose: the view of one scope: the scope itself and the probe scopes
//   linked to it ((S)-[:PROBED_BY]->(P), made by `ace diagnose`). Estimates of
//   S are fitted on the rollouts of the whole view. One row per probe scope;
//   a scope without probes gives one row with probe null; no row: no scope.
// Parameters: $scope (string, "experiment/policy/checkpoint")
// Columns: scope, experiment, policy, checkpoint, round, rollouts, probe,
//   probe_rollouts
// Mode: read
// Required: scope
// Names: $scope scope
// :params {scope: "demo/sim/round-0"}
MATCH (sc:Scope {key: $scope})
OPTIONAL MATCH (sc)-[:PROBED_BY]->(p:Scope)
RETURN sc.key AS scope, sc.experiment AS experiment, sc.policy AS policy, sc.checkpoint AS checkpoint,
       sc.round AS round, sc.rollouts AS rollouts, p.key AS probe, p.rollouts AS probe_rollouts
ORDER BY probe
