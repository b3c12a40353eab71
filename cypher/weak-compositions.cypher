// Purpose: the weak compositions of one scope: adjacent pairs a→b where b
//   fails significantly more often right after a than elsewhere (the 95%
//   Newcombe lower bound of the fragility is above $min_lift) with enough support.
//   This separates a weak composition from a skill (or tool) that is weak
//   everywhere. Strongest evidence first.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $level ("skill" or "tool"), $min_support (int),
//   $min_lift (float, e.g. 0.05: the lower bound must clear it, which guards
//   against the many edges tested at once), $limit (int)
// Columns: from, to, n, failures, composition_success, target_success_elsewhere,
//   fragility, fragility_low
// Mode: read
// Required: scope
// :params {scope: "demo/sim/round-0", level: "skill", min_support: 20, min_lift: 0.05, limit: 20}
MATCH (sc:Scope {key: $scope})
MATCH (a)-[c:COMPOSES {scope: $scope, level: $level}]->(b)
WHERE c.n >= $min_support AND c.failures > 0
MATCH (sc)-[mb:MEASURED]->(b)
WITH a, b, c, 1.959964 AS z, c.n AS n1, c.failures AS f1,
     mb.attempts - c.n AS n0, mb.failures - c.failures AS f0
WITH a, b, z, n1, f1, n0, toFloat(f1) / n1 AS p1, CASE WHEN n0 > 0 THEN toFloat(f0) / n0 ELSE 0.0 END AS p0
WITH a, b, n1, f1, p1, p0,
     (p1 + z * z / (2 * n1) - z * sqrt(p1 * (1 - p1) / n1 + z * z / (4.0 * n1 * n1))) / (1 + z * z / n1) AS l1,
     CASE WHEN n0 > 0 THEN (p0 + z * z / (2 * n0) + z * sqrt(p0 * (1 - p0) / n0 + z * z / (4.0 * n0 * n0))) / (1 + z * z / n0) ELSE 1.0 END AS u0
WITH a, b, n1, f1, p1, p0, p1 - p0 - sqrt((p1 - l1) ^ 2 + (u0 - p0) ^ 2) AS low
WHERE low > $min_lift
RETURN coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to, n1 AS n, f1 AS failures,
       1 - p1 AS composition_success, 1 - p0 AS target_success_elsewhere,
       p1 - p0 AS fragility, low AS fragility_low
ORDER BY fragility_low DESC, n DESC, from, to
LIMIT $limit
