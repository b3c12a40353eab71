// Purpose: per task, how one scope's stored rollouts went: rollouts,
//   rewarded, failed, mean partial credit and the commonest failure
//   attributions. Tasks with the most failures first.
// Parameters: $scope (string, "experiment/policy/checkpoint"; see
//   `ace scopes`), $failures_only (bool, only tasks with a failing rollout),
//   $limit (int)
// Columns: task_id, rollouts, rewarded, failed, partial_credit, attributions
// Mode: read
// Required: scope
// Names: $scope scope
// :params {scope: "demo/sim/round-0", failures_only: false, limit: 100000}
MATCH (r:Rollout)
WHERE r.scope = $scope
WITH r.task_id AS task_id, count(r) AS rollouts, sum(CASE WHEN r.reward = 1.0 THEN 1 ELSE 0 END) AS rewarded,
     avg(r.partial_credit) AS partial_credit,
     [a IN collect(r.attribution) WHERE a IS NOT NULL AND a <> ''] AS atts
WHERE NOT $failures_only OR rollouts > rewarded
CALL (atts) {
  UNWIND CASE WHEN size(atts) = 0 THEN [null] ELSE atts END AS a
  WITH a, count(*) AS k WHERE a IS NOT NULL
  ORDER BY k DESC, a
  RETURN collect(a + ' ' + toString(k))[0..2] AS attributions
}
RETURN task_id, rollouts, rewarded, rollouts - rewarded AS failed, partial_credit, attributions
ORDER BY failed DESC, task_id
LIMIT $limit
