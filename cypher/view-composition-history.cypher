// Purpose: how the success of each observed composition a→b (b reached right
//   after a) moved across the checkpoints of one experiment and policy, at
//   skill or tool level, for compositions with at least $min_support reached
//   steps in some checkpoint. Scopes being deleted or marked
//   incomplete (an ingest stopped part-way) are left out.
// Mode: read
// Parameters: $experiment (string), $policy (string), $level ("skill" or
//   "tool"), $min_support (int)
// Columns: round, checkpoint, from, to, n, failures, success_rate
// Required: experiment, policy
// Names: $experiment experiment, $policy policy, $level level
// :params {experiment: "demo", policy: "sim", level: "tool", min_support: 20}
MATCH (sc:Scope {experiment: $experiment, policy: $policy})
WHERE NOT coalesce(sc.deleting, false) AND NOT coalesce(sc.incomplete, false)
MATCH (a)-[c:COMPOSES {scope: sc.key, level: $level}]->(b)
WHERE c.n > 0
WITH sc, a, b, c
WITH coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to,
     collect({round: sc.round, checkpoint: sc.checkpoint, n: c.n, failures: c.failures}) AS points,
     max(c.n) AS most
WHERE most >= $min_support
UNWIND points AS pt
RETURN pt.round AS round, pt.checkpoint AS checkpoint, from, to, pt.n AS n, pt.failures AS failures,
       1 - toFloat(pt.failures) / pt.n AS success_rate
ORDER BY from, to, round, checkpoint
