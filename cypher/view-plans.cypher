// Purpose: the synthesis plans of one experiment with their target edge,
//   strategy and settings, status, and the round statistics (attempted,
//   valid, validity, mean pass rate of the policy, learnable share: tasks the
//   policy sometimes but not always passes) and tasks produced.
// Mode: read
// Parameters: $experiment (string)
// Columns: plan, round, target, strategy, strength, depth, style, status,
//   attempted, valid, validity, pass_rate, learnable_share, tasks
// Required: experiment
// Names: $experiment experiment
// :params {experiment: "demo"}
MATCH (p:Plan {experiment: $experiment})
OPTIONAL MATCH (p)-[:PRODUCED]->(t:Task)
RETURN p.plan AS plan, p.round AS round, p.target AS target, p.strategy AS strategy,
       p.strength AS strength, p.depth AS depth, p.style AS style, p.status AS status,
       p.attempted AS attempted, p.valid AS valid, p.validity AS validity, p.pass_rate AS pass_rate,
       p.learnable_share AS learnable_share, count(t) AS tasks
ORDER BY round, plan
