// Purpose: curriculum evidence for one scope: every observed composition a→b
//   (adjacent pair, skill or tool level) with how often b was reached right
//   after a, how often it failed there and its success (1 - failures / n),
//   plus the prior dependency edges a→b (a is a prerequisite of b) with
//   their task counts summed over kinds (failures and success are null).
//   Rows come unordered: compositions first, then prior edges.
// Parameters: $scope (string, "experiment/policy/checkpoint"),
//   $level ("skill" or "tool")
// Columns: kind, from, to, n, failures, success
// Mode: read
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool"}
MATCH (a)-[c:COMPOSES {scope: $scope, level: $level}]->(b)
WHERE c.n > 0
RETURN 'composition' AS kind, coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to,
       c.n AS n, c.failures AS failures, 1.0 - toFloat(c.failures) / c.n AS success
UNION ALL
MATCH (a)-[p:PRIOR]->(b)
WHERE a <> b
  AND (($level = 'skill' AND a:Skill AND b:Skill) OR ($level = 'tool' AND a:Tool AND b:Tool))
WITH a, b, sum(p.count) AS n
RETURN 'prior' AS kind, coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to,
       n, null AS failures, null AS success
