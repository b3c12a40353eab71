// Purpose: the tool compositions that realize one skill composition $from→$to
//   in a scope: every pair of oracle calls (x then y) the scope's rollouts
//   reached where x's step exercised skill $from and y's step skill $to, with
//   how often y was reached right after x there and how often it failed.
//   `ace synth --target SKILL>SKILL` aims at these tool pairs (synthesis
//   rewrites tool calls). Only pairs with at least one failure; most failures first.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $from (string, skill id),
//   $to (string, skill id), $limit (int)
// Columns: from, to, n, failures
// Mode: read
// Required: scope, from, to
// Names: $scope scope, $from skill, $to skill
// :params {scope: "demo/sim/round-0", from: "param_from_output", to: "state_precondition", limit: 20}
MATCH (r:Rollout {scope: $scope})-[:HAS_STEP]->(s:Step)
WHERE s.prev_tool IS NOT NULL AND s.tool IS NOT NULL AND $from IN s.prev_skills AND $to IN s.skills
WITH s.prev_tool AS from, s.tool AS to, count(*) AS n, sum(CASE WHEN s.outcome = 'fail' THEN 1 ELSE 0 END) AS failures
WHERE failures > 0
RETURN from, to, n, failures
ORDER BY failures DESC, n DESC, from, to
LIMIT $limit
