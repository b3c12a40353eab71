// Purpose: the synthesis frontier of one scope: weak compositions next to the
//   agent's capability boundary. Both prerequisite skills (or tools) are
//   reasonably strong on their own (success of a, and of b away from a, at
//   least $min_prereq) while b fails significantly more often right after a.
//   Each row carries its evidence, example near-success rollouts and seed
//   tasks whose oracle contains the composition.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $level ("skill" or "tool"), $min_support (int),
//   $min_lift (float, e.g. 0.05), $min_prereq (float, e.g. 0.6), $limit (int)
// Columns: from, to, n, failures, from_success, composition_success,
//   target_success_elsewhere, fragility, fragility_low, near_success_examples,
//   seed_tasks
// Mode: read
// Required: scope
// :params {scope: "demo/sim/round-0", level: "skill", min_support: 20, min_lift: 0.05, min_prereq: 0.6, limit: 20}
MATCH (sc:Scope {key: $scope})
MATCH (a)-[c:COMPOSES {scope: $scope, level: $level}]->(b)
WHERE c.n >= $min_support AND c.failures > 0
MATCH (sc)-[ma:MEASURED]->(a), (sc)-[mb:MEASURED]->(b)
WITH a, b, c, 1.959964 AS z, c.n AS n1, c.failures AS f1,
     mb.attempts - c.n AS n0, mb.failures - c.failures AS f0,
     toFloat(ma.attempts - ma.failures) / ma.attempts AS sa
WITH a, b, c, z, n1, f1, n0, sa, toFloat(f1) / n1 AS p1, CASE WHEN n0 > 0 THEN toFloat(f0) / n0 ELSE 0.0 END AS p0
WHERE sa >= $min_prereq AND 1 - p0 >= $min_prereq
WITH a, b, c, n1, f1, sa, p1, p0,
     (p1 + z * z / (2 * n1) - z * sqrt(p1 * (1 - p1) / n1 + z * z / (4.0 * n1 * n1))) / (1 + z * z / n1) AS l1,
     CASE WHEN n0 > 0 THEN (p0 + z * z / (2 * n0) + z * sqrt(p0 * (1 - p0) / n0 + z * z / (4.0 * n0 * n0))) / (1 + z * z / n0) ELSE 1.0 END AS u0
WITH a, b, c, n1, f1, sa, p1, p0, p1 - p0 - sqrt((p1 - l1) ^ 2 + (u0 - p0) ^ 2) AS low
WHERE low > $min_lift
WITH a, b, c, n1, f1, sa, p1, p0, low,
     coalesce(a.id, a.name) + '>' + coalesce(b.id, b.name) AS pair
CALL (pair) {
  MATCH (:Composition {key: $level + ':' + pair})<-[:CONTAINS]-(t:Task)
  WITH t ORDER BY t.source = 'ace', t.id LIMIT 10
  RETURN collect(t.id) AS seed_tasks
}
RETURN coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to, n1 AS n, f1 AS failures,
       sa AS from_success, 1 - p1 AS composition_success, 1 - p0 AS target_success_elsewhere,
       p1 - p0 AS fragility, low AS fragility_low, c.examples AS near_success_examples, seed_tasks
ORDER BY fragility_low DESC, n DESC, from, to
LIMIT $limit
