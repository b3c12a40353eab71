// Purpose: failed rollouts of one scope whose failing step used skill $skill
//   right after a step that used skill $after (an analyst's drill-down on a
//   composition, over stored steps).
// Parameters: $scope (string, "experiment/policy/checkpoint"), $after (string, skill id), $skill (string,
//   skill id), $limit (int)
// Columns: rollout, task_id, failing_tool, previous_tool, attribution
// Mode: read
// Required: scope, after, skill
// :params {scope: "demo/sim/round-0", after: "result_extraction", skill: "param_from_output", limit: 20}
MATCH (r:Rollout)-[:HAS_STEP]->(f:Step {outcome: 'fail'})
WHERE r.scope = $scope AND $skill IN f.skills
MATCH (p:Step)-[:NEXT]->(f)
WHERE $after IN p.skills
RETURN r.rollout_id AS rollout, r.task_id AS task_id, f.tool AS failing_tool,
       p.tool AS previous_tool, r.attribution AS attribution
ORDER BY rollout
LIMIT $limit
