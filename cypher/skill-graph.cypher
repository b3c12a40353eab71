// Purpose: the skill dependency graph of one scope, for drawing: every skill
//   with its success rate, prior edges (data_flow / precondition) and the
//   scope's observed compositions with their failure propagation.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $min_support (int)
// Columns: kind, from, to, family, success_rate, attempts, edge_kind, n,
//   p_fail_after, fragility
// Mode: read
// Required: scope
// Names: $scope scope
// :params {scope: "demo/sim/round-0", min_support: 20}
MATCH (k:Skill)
OPTIONAL MATCH (:Scope {key: $scope})-[m:MEASURED]->(k)
RETURN 'node' AS kind, k.id AS from, null AS to, k.family AS family,
       CASE WHEN m.attempts > 0 THEN toFloat(m.attempts - m.failures) / m.attempts ELSE null END AS success_rate,
       coalesce(m.attempts, 0) AS attempts, null AS edge_kind, null AS n, null AS p_fail_after, null AS fragility
UNION ALL
MATCH (a:Skill)-[p:PRIOR]->(b:Skill)
RETURN 'edge' AS kind, a.id AS from, b.id AS to, null AS family, null AS success_rate, null AS attempts,
       'prior:' + p.kind AS edge_kind, p.count AS n, null AS p_fail_after, null AS fragility
UNION ALL
MATCH (sc:Scope {key: $scope})
MATCH (a:Skill)-[c:COMPOSES {scope: $scope, level: 'skill'}]->(b:Skill)
WHERE c.n >= $min_support
MATCH (sc)-[mb:MEASURED]->(b)
WITH a, b, c, toFloat(c.failures) / c.n AS p1,
     CASE WHEN mb.attempts > c.n THEN toFloat(mb.failures - c.failures) / (mb.attempts - c.n) ELSE 0.0 END AS p0
RETURN 'edge' AS kind, a.id AS from, b.id AS to, null AS family, null AS success_rate, null AS attempts,
       'composes' AS edge_kind, c.n AS n, p1 AS p_fail_after, p1 - p0 AS fragility
