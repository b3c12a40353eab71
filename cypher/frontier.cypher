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
//   , verdict, method, effect, effect_low, tool_effect, missing, view
// Mode: read
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool", min_support: 20, min_lift: 0.05, min_prereq: 0.6, limit: 20}

// As in weak-compositions: where the composition estimator has run, its verdict
// decides (edges called `composition` or `ambiguous`; ambiguous ones are
// listed after the others, with what evidence is `missing`: a synthesizer
// aiming at the frontier should probe them (`ace diagnose`) before training on
// them), and `view` lists the scopes the estimate was fitted on.
MATCH (sc:Scope {key: $scope})
MATCH (a)-[c:COMPOSES {scope: $scope, level: $level}]->(b)
WHERE coalesce(c.est_n, c.n) >= $min_support AND coalesce(c.est_failures, c.failures) > 0
MATCH (sc)-[ma:MEASURED]->(a), (sc)-[mb:MEASURED]->(b)
WITH a, b, c, 1.959964 AS z, c.n AS n1, c.failures AS f1,
     mb.attempts - c.n AS n0, mb.failures - c.failures AS f0,
     toFloat(ma.attempts - ma.failures) / ma.attempts AS sa
WITH a, b, c, z, n1, f1, n0, sa, CASE WHEN n1 > 0 THEN toFloat(f1) / n1 ELSE 0.0 END AS p1,
     CASE WHEN n0 > 0 THEN toFloat(f0) / n0 ELSE 0.0 END AS p0
WHERE sa >= $min_prereq AND 1 - p0 >= $min_prereq
WITH a, b, c, n1, f1, sa, p1, p0,
     CASE WHEN n1 > 0 THEN (p1 + z * z / (2 * n1) - z * sqrt(p1 * (1 - p1) / n1 + z * z / (4.0 * n1 * n1))) / (1 + z * z / n1) ELSE 0.0 END AS l1,
     CASE WHEN n0 > 0 THEN (p0 + z * z / (2 * n0) + z * sqrt(p0 * (1 - p0) / n0 + z * z / (4.0 * n0 * n0))) / (1 + z * z / n0) ELSE 1.0 END AS u0
WITH a, b, c, n1, f1, sa, p1, p0, p1 - p0 - sqrt((p1 - l1) ^ 2 + (u0 - p0) ^ 2) AS low
WHERE CASE WHEN c.verdict IS NULL THEN n1 > 0 AND low > $min_lift
           ELSE c.verdict IN ['composition', 'ambiguous'] END
WITH a, b, c, n1, f1, sa, p1, p0, low,
     coalesce(a.id, a.name) + '>' + coalesce(b.id, b.name) AS pair
CALL (pair) {
  MATCH (:Composition {key: $level + ':' + pair})<-[:CONTAINS]-(t:Task)
  WITH t ORDER BY t.source = 'ace', t.id LIMIT 10
  RETURN collect(t.id) AS seed_tasks
}
RETURN coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to, n1 AS n, f1 AS failures,
       sa AS from_success, 1 - p1 AS composition_success, 1 - p0 AS target_success_elsewhere,
       p1 - p0 AS fragility, low AS fragility_low, c.examples AS near_success_examples, seed_tasks,
       coalesce(c.verdict, 'composition') AS verdict,
       CASE WHEN c.verdict IS NULL THEN 'interval' ELSE 'estimate' END AS method,
       c.est_effect AS effect, c.est_effect_low AS effect_low, c.est_tool_effect AS tool_effect,
       coalesce(c.est_missing, '') AS missing, coalesce(c.est_view, [$scope]) AS view
ORDER BY verdict = 'ambiguous', coalesce(effect_low, fragility_low) DESC, n DESC, from, to
LIMIT $limit
