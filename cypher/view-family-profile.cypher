// Purpose: capability of the agent in one scope per skill family (or, at tool
//   level, per API class): attempts and successes summed over the family's
//   skills (tools), the success rate and its 95% Wilson interval. Weakest
//   first. Reads only the scope's aggregates.
// Mode: read
// Parameters: $scope (string, "experiment/policy/checkpoint"),
//   $level ("skill" or "tool")
// Columns: family, members, attempts, successes, success_rate, ci_low, ci_high
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool"}
MATCH (sc:Scope {key: $scope})-[m:MEASURED]->(k)
WHERE m.level = $level AND m.attempts > 0
WITH coalesce(k.family, k.class, '(none)') AS family, count(k) AS members,
     sum(m.attempts) AS n, sum(m.attempts - m.failures) AS s, 1.959964 AS z
WITH family, members, n, s, toFloat(s) / n AS p, z
RETURN family, members, n AS attempts, s AS successes, p AS success_rate,
       (p + z * z / (2 * n) - z * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n))) / (1 + z * z / n) AS ci_low,
       (p + z * z / (2 * n) + z * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n))) / (1 + z * z / n) AS ci_high
ORDER BY success_rate ASC, attempts DESC, family
