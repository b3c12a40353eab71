// Purpose: mark a scope incomplete while an ingest into it runs, and complete
//   when it ends without error. An ingest that stops (a bad line, a crash,
//   kill -9) leaves the mark; rerunning the same ingest completes the scope
//   (stored rollouts are skipped) and clears it. Creates the scope if new.
// Parameters: $scope (map {key, experiment, policy, checkpoint, round}),
//   $incomplete (boolean)
// Columns: key, rollouts
MERGE (sc:Scope {key: $scope.key})
ON CREATE SET sc.experiment = $scope.experiment, sc.policy = $scope.policy,
    sc.checkpoint = $scope.checkpoint, sc.round = $scope.round, sc.created = datetime(),
    sc.rollouts = 0, sc.rewarded = 0, sc.near_success = 0, sc.steps = 0,
    sc.pairs_skill = 0, sc.pairs_tool = 0
SET sc.incomplete = $incomplete, sc.updated = datetime()
RETURN sc.key AS key, sc.rollouts AS rollouts
