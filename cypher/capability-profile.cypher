// Purpose: capability of the agent in one scope: for each skill (or tool),
//   how many reached oracle steps used it, how many passed, the success rate
//   and its 95% Wilson interval. Weakest first. Reads only the scope's
//   aggregates, never the rollouts.
// Parameters: $scope (string, "experiment/policy/checkpoint"),
//   $level ("skill" or "tool")
// Columns: key, family, attempts, successes, success_rate, ci_low, ci_high
// Mode: read
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool"}
MATCH (sc:Scope {key: $scope})-[m:MEASURED]->(k)
WHERE m.level = $level AND m.attempts > 0
WITH coalesce(k.id, k.name) AS key, coalesce(k.family, k.class) AS family,
     m.attempts AS n, m.attempts - m.failures AS s, 1.959964 AS z
WITH key, family, n, s, toFloat(s) / n AS p, z
RETURN key, family, n AS attempts, s AS successes, p AS success_rate,
       (p + z * z / (2 * n) - z * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n))) / (1 + z * z / n) AS ci_low,
       (p + z * z / (2 * n) + z * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n))) / (1 + z * z / n) AS ci_high
ORDER BY success_rate ASC, attempts DESC, key
