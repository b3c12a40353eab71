// Purpose: add one batch's totals to its scope (rollouts, rewarded,
//   near-success, reached steps, adjacent pairs per level), and mark the scope
//   incomplete: an ingest is writing it (ingest-scope-complete clears the mark
//   when the ingest ends without error; one that stops leaves it).
// Parameters: $scope (string, "experiment/policy/checkpoint"), $totals (map {rollouts, rewarded, near_success,
//   steps, pairs_skill, pairs_tool})
// Columns: rollouts
// Mode: write
MATCH (sc:Scope {key: $scope})
SET sc.rollouts = sc.rollouts + $totals.rollouts, sc.rewarded = sc.rewarded + $totals.rewarded,
    sc.near_success = sc.near_success + $totals.near_success, sc.steps = sc.steps + $totals.steps,
    sc.pairs_skill = sc.pairs_skill + $totals.pairs_skill, sc.pairs_tool = sc.pairs_tool + $totals.pairs_tool,
    sc.incomplete = true
RETURN sc.rollouts AS rollouts
