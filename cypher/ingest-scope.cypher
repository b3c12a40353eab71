// Purpose: create the scope (experiment, policy, checkpoint) of an ingest if
//   it is new. Runs first in every ingest transaction; it takes no lock on an
//   existing scope, so batches into one scope can be written concurrently
//   (counts are added with increments that lock before they read).
// Parameters: $scope (map {key, experiment, policy, checkpoint, round, mode}); mode is
//   "free-running" (rollouts) or "gold-prefix" (train.goldprefix: every oracle step scored)
// Columns: key
// Mode: write
MERGE (sc:Scope {key: $scope.key})
ON CREATE SET sc.experiment = $scope.experiment, sc.policy = $scope.policy,
    sc.checkpoint = $scope.checkpoint, sc.round = $scope.round, sc.created = datetime(),
    sc.mode = coalesce($scope.mode, 'free-running'),
    sc.rollouts = 0, sc.rewarded = 0, sc.near_success = 0, sc.steps = 0,
    sc.pairs_skill = 0, sc.pairs_tool = 0
RETURN sc.key AS key
