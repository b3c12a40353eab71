// Purpose: the synthesized tasks of one experiment aimed at the tool
//   composition $from→$to (the target edge of the plan that produced them),
//   with plan, strategy, round and the seed tasks they derive from.
// Mode: read
// Parameters: $experiment (string), $from (string, tool), $to (string, tool),
//   $limit (int)
// Columns: task_id, plan, strategy, round, parents
// Required: experiment, from, to
// Names: $experiment experiment, $from tool, $to tool
// :params {experiment: "demo", from: "place_order", to: "get_order_details", limit: 20}
MATCH (p:Plan {experiment: $experiment})-[:PRODUCED]->(t:Task)
WHERE t.target_edge = $from + '>' + $to
OPTIONAL MATCH (t)-[:DERIVED_FROM]->(s:Task)
RETURN t.id AS task_id, p.plan AS plan, t.strategy AS strategy, t.round AS round, collect(s.id) AS parents
ORDER BY round, task_id
LIMIT $limit
