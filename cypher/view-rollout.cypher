// Purpose: one stored rollout of a scope, for its transcript: the calls it
//   made (JSON, one list per user turn), its verdict and where it failed.
// Mode: read
// Parameters: $scope (string, "experiment/policy/checkpoint"), $rollout (string, the rollout's own id)
// Columns: rollout, task_id, reward, partial_credit, step_match, near_success,
//   attribution, failing_turn, failing_step, fail_tool, fail_prev_tool,
//   detail, calls
// Required: scope, rollout
// Names: $scope scope, $rollout rollout
// :params {scope: "demo/sim/round-0", rollout: "sim-0"}
MATCH (r:Rollout {id: $scope + '/' + $rollout})
RETURN r.rollout_id AS rollout, r.task_id AS task_id, r.reward AS reward, r.partial_credit AS partial_credit,
       r.step_match AS step_match, r.near_success AS near_success, r.attribution AS attribution,
       r.failing_turn AS failing_turn, r.failing_step AS failing_step, r.fail_tool AS fail_tool,
       r.fail_prev_tool AS fail_prev_tool, r.detail AS detail, r.calls AS calls
