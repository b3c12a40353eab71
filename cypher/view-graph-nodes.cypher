// Purpose: the nodes of the dependency graph for drawing, at skill or tool
//   level: every skill (tool) with its family (API class) and, in the given
//   scope, its attempts and success rate (null when never reached there).
// Mode: read
// Parameters: $scope (string, "experiment/policy/checkpoint"), $level ("skill" or "tool")
// Columns: key, family, attempts, success_rate
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool"}
MATCH (k)
WHERE ($level = 'skill' AND k:Skill) OR ($level = 'tool' AND k:Tool)
OPTIONAL MATCH (:Scope {key: $scope})-[m:MEASURED]->(k)
RETURN coalesce(k.id, k.name) AS key, coalesce(k.family, k.class) AS family,
       coalesce(m.attempts, 0) AS attempts,
       CASE WHEN m.attempts > 0 THEN toFloat(m.attempts - m.failures) / m.attempts ELSE null END AS success_rate
ORDER BY family, key
