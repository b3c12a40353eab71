// Purpose: near-success rollouts of one scope (they matched at least the
//   near-success share of the oracle's steps and still failed) whose failing
//   step is `to` right after `from`, at tool or skill level, with how the
//   failing step went wrong.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $level ("skill" or "tool"), $from (string),
//   $to (string), $limit (int)
// Columns: rollout, task_id, attribution, failing_turn, failing_step,
//   step_match, detail
// Mode: read
// Required: scope, from, to
// Names: $scope scope, $level level, $from node, $to node
// :params {scope: "demo/sim/round-0", level: "tool", from: "place_order", to: "get_order_details", limit: 20}
MATCH (r:Rollout)
WHERE r.scope = $scope AND r.near_success = true
  AND (($level = 'tool' AND r.fail_prev_tool = $from AND r.fail_tool = $to)
    OR ($level = 'skill' AND $from IN r.fail_prev_skills AND $to IN r.fail_skills))
RETURN r.rollout_id AS rollout, r.task_id AS task_id, r.attribution AS attribution,
       r.failing_turn AS failing_turn, r.failing_step AS failing_step,
       r.step_match AS step_match, r.detail AS detail
ORDER BY r.step_match DESC, r.rollout_id
LIMIT $limit
