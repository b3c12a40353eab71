// Purpose: the edges of the dependency graph for drawing, at skill or tool
//   level: prior edges from the oracles (kind "prior:data_flow" or
//   "prior:precondition", n = tasks showing it) and the scope's observed
//   compositions a→b with at least $min_support reached steps: how often b
//   failed right after a, the fragility (that minus b's failure rate
//   elsewhere) and its 95% Newcombe lower bound.
// Mode: read
// Parameters: $scope (string, "experiment/policy/checkpoint"), $level ("skill" or "tool"), $min_support (int)
// Columns: from, to, edge_kind, n, failures, p_fail_after, fragility,
//   fragility_low
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool", min_support: 20}
MATCH (a)-[p:PRIOR]->(b)
WHERE ($level = 'skill' AND a:Skill AND b:Skill) OR ($level = 'tool' AND a:Tool AND b:Tool)
RETURN coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to, 'prior:' + p.kind AS edge_kind,
       p.count AS n, null AS failures, null AS p_fail_after, null AS fragility, null AS fragility_low
UNION ALL
MATCH (sc:Scope {key: $scope})
MATCH (a)-[c:COMPOSES {scope: $scope, level: $level}]->(b)
WHERE c.n >= $min_support
MATCH (sc)-[mb:MEASURED]->(b)
WITH a, b, c, 1.959964 AS z, c.n AS n1, c.failures AS f1, mb.attempts - c.n AS n0, mb.failures - c.failures AS f0
WITH a, b, z, n1, f1, n0, toFloat(f1) / n1 AS p1, CASE WHEN n0 > 0 THEN toFloat(f0) / n0 ELSE 0.0 END AS p0
WITH a, b, n1, f1, p1, p0,
     (p1 + z * z / (2 * n1) - z * sqrt(p1 * (1 - p1) / n1 + z * z / (4.0 * n1 * n1))) / (1 + z * z / n1) AS l1,
     CASE WHEN n0 > 0 THEN (p0 + z * z / (2 * n0) + z * sqrt(p0 * (1 - p0) / n0 + z * z / (4.0 * n0 * n0))) / (1 + z * z / n0) ELSE 1.0 END AS u0
RETURN coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to, 'composes' AS edge_kind, n1 AS n,
       f1 AS failures, p1 AS p_fail_after, p1 - p0 AS fragility,
       p1 - p0 - sqrt((p1 - l1) ^ 2 + (u0 - p0) ^ 2) AS fragility_low
