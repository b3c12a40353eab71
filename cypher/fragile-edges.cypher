// Purpose: failure propagation along every adjacent composition a→b in one
//   scope: how often b fails right after a (p_fail_after) against how often b
//   fails otherwise (p_fail_otherwise), their difference (fragility) with a
//   95% Newcombe interval, and co-occurrence statistics (conditional
//   probability of b after a, pointwise mutual information). A skill that is
//   weak everywhere has fragility near 0 on all its edges. Reads only
//   aggregates.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $level ("skill" or "tool"), $min_support (int,
//   minimum times b was reached right after a), $min_lift (float, how far above
//   0 the interval's lower bound must be for `significant`, e.g. 0.05)
// Columns: from, to, n, failures, p_fail_after, p_fail_otherwise, fragility,
//   fragility_low, fragility_high, significant, cooc, p_next, pmi
// Mode: read
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool", min_support: 20, min_lift: 0.05}
MATCH (sc:Scope {key: $scope})
MATCH (a)-[c:COMPOSES {scope: $scope, level: $level}]->(b)
WHERE c.n >= $min_support
MATCH (sc)-[ma:MEASURED]->(a), (sc)-[mb:MEASURED]->(b)
WITH a, b, c, ma, sc, 1.959964 AS z,
     c.n AS n1, c.failures AS f1, mb.attempts - c.n AS n0, mb.failures - c.failures AS f0,
     CASE $level WHEN 'skill' THEN sc.pairs_skill ELSE sc.pairs_tool END AS pairs, mb.as_succ AS succ
WITH a, b, c, ma, z, n1, f1, n0, f0, pairs, succ,
     toFloat(f1) / n1 AS p1, CASE WHEN n0 > 0 THEN toFloat(f0) / n0 ELSE 0.0 END AS p0
WITH a, b, c, ma, n1, f1, n0, p1, p0, pairs, succ,
     (p1 + z * z / (2 * n1) - z * sqrt(p1 * (1 - p1) / n1 + z * z / (4.0 * n1 * n1))) / (1 + z * z / n1) AS l1,
     (p1 + z * z / (2 * n1) + z * sqrt(p1 * (1 - p1) / n1 + z * z / (4.0 * n1 * n1))) / (1 + z * z / n1) AS u1,
     CASE WHEN n0 > 0 THEN (p0 + z * z / (2 * n0) - z * sqrt(p0 * (1 - p0) / n0 + z * z / (4.0 * n0 * n0))) / (1 + z * z / n0) ELSE 0.0 END AS l0,
     CASE WHEN n0 > 0 THEN (p0 + z * z / (2 * n0) + z * sqrt(p0 * (1 - p0) / n0 + z * z / (4.0 * n0 * n0))) / (1 + z * z / n0) ELSE 1.0 END AS u0
WITH a, b, c, ma, n1, f1, p1, p0, pairs, succ,
     p1 - p0 - sqrt((p1 - l1) ^ 2 + (u0 - p0) ^ 2) AS low,
     p1 - p0 + sqrt((u1 - p1) ^ 2 + (p0 - l0) ^ 2) AS high
RETURN coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to, n1 AS n, f1 AS failures,
       p1 AS p_fail_after, p0 AS p_fail_otherwise, p1 - p0 AS fragility,
       low AS fragility_low, high AS fragility_high, low > $min_lift AS significant, c.cooc AS cooc,
       CASE WHEN ma.as_pred > 0 THEN toFloat(c.cooc) / ma.as_pred ELSE null END AS p_next,
       CASE WHEN c.cooc > 0 AND ma.as_pred > 0 AND succ > 0
            THEN log(toFloat(c.cooc) * pairs / (toFloat(ma.as_pred) * succ)) ELSE null END AS pmi
ORDER BY fragility_low DESC, n DESC, from, to
