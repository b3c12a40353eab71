// Purpose: failed rollouts of one scope whose failing step is $skill right
//   after a step that is $after (an analyst's drill-down on a composition,
//   over stored steps), at tool or skill level: with $level "tool" both are
//   tool names, with "skill" skill ids.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $level ("skill" or "tool"),
//   $after (string, the previous step's tool or skill id, as $level says), $skill (string, the failing
//   step's tool or skill id, as $level says), $limit (int)
// Columns: rollout, task_id, failing_tool, previous_tool, attribution
// Mode: read
// Required: scope, after, skill
// Names: $scope scope, $level level, $after node, $skill node
// :params {scope: "demo/sim/round-0", level: "tool", after: "place_order", skill: "get_order_details", limit: 20}
MATCH (r:Rollout)-[:HAS_STEP]->(f:Step {outcome: 'fail'})
WHERE r.scope = $scope
  AND (($level = 'skill' AND $skill IN f.skills) OR ($level = 'tool' AND f.tool = $skill))
MATCH (p:Step)-[:NEXT]->(f)
WHERE ($level = 'skill' AND $after IN p.skills) OR ($level = 'tool' AND p.tool = $after)
RETURN r.rollout_id AS rollout, r.task_id AS task_id, f.tool AS failing_tool,
       p.tool AS previous_tool, r.attribution AS attribution
ORDER BY rollout
LIMIT $limit
