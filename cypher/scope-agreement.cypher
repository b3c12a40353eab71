// Purpose: how one scope's verdicts agree with the benchmark's own recorded
//   rewards (τ²-bench result files record one per conversation): rollouts with a
//   recorded reward, how many each side passed, how many verdicts are equal, and
//   where ACE is looser or stricter; plus how many passed rollouts break one of
//   ACE's stricter rules (listed, not counted: `ace ingest --strict` counts them).
// Parameters: $scope (string, "experiment/policy/checkpoint"; see `ace scopes`)
// Columns: rollouts, with_reference, ace_passed, reference_passed, agree, ace_looser,
//   ace_stricter, passed_with_stricter_rules
// Mode: read
// Required: scope
// Names: $scope scope
// :params {scope: "demo-real/gpt-4.1/base"}
MATCH (r:Rollout)
WHERE r.scope = $scope
WITH count(r) AS rollouts,
     [x IN collect(r) WHERE x.reference_reward IS NOT NULL] AS judged,
     sum(CASE WHEN r.reward = 1.0 AND size(coalesce(r.stricter_because, [])) > 0 THEN 1 ELSE 0 END) AS strict_listed
RETURN rollouts, size(judged) AS with_reference,
       size([x IN judged WHERE x.reward = 1.0]) AS ace_passed,
       size([x IN judged WHERE x.reference_reward = 1.0]) AS reference_passed,
       size([x IN judged WHERE x.reward = x.reference_reward]) AS agree,
       size([x IN judged WHERE x.reward > x.reference_reward]) AS ace_looser,
       size([x IN judged WHERE x.reward < x.reference_reward]) AS ace_stricter,
       strict_listed AS passed_with_stricter_rules
