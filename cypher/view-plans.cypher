// Purpose: the synthesis plans of one experiment with their target edge,
//   strategy and settings, status, and their statistics over every round of
//   the `ace synth` run that stored them: attempted (tasks tried), valid (of
//   those, tasks that passed task verification: the tasks it produced in that
//   run), validity (valid / attempted), pass_rate (share of the policy's
//   rollouts on them that passed), learnable_share (share of valid tasks the
//   policy passed sometimes but not always). tasks counts the Task nodes linked
//   to the plan (PRODUCED), from every run of the experiment that stored a plan
//   with this id, so it exceeds valid when a rerun made other tasks.
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
