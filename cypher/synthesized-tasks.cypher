// Purpose: the tasks synthesized for one experiment, with the plan, strategy,
//   target edge, round and seed tasks behind each (their lineage).
// Parameters: $experiment (string), $limit (int)
// Columns: task_id, plan, strategy, target_edge, round, parents
// Mode: read
// Required: experiment
// Names: $experiment experiment
// :params {experiment: "demo", limit: 20}
MATCH (p:Plan {experiment: $experiment})-[:PRODUCED]->(t:Task)
OPTIONAL MATCH (t)-[:DERIVED_FROM]->(s:Task)
RETURN t.id AS task_id, p.plan AS plan, t.strategy AS strategy, t.target_edge AS target_edge,
       t.round AS round, collect(s.id) AS parents
ORDER BY round, task_id
LIMIT $limit
