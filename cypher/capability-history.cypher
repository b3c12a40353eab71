// Purpose: how the success rate of each skill (or tool) moved across the
//   checkpoints (rounds) of one experiment and policy. Scopes being deleted or marked
//   incomplete (an ingest stopped part-way) are left out.
// Parameters: $experiment (string), $policy (string), $level ("skill" or "tool")
// Columns: round, checkpoint, key, attempts, success_rate
// Mode: read
// Required: experiment, policy
// Names: $experiment experiment, $policy policy, $level level
// :params {experiment: "demo", policy: "sim", level: "tool"}
MATCH (sc:Scope {experiment: $experiment, policy: $policy})-[m:MEASURED]->(k)
WHERE NOT coalesce(sc.deleting, false) AND NOT coalesce(sc.incomplete, false) AND m.level = $level AND m.attempts > 0
RETURN sc.round AS round, sc.checkpoint AS checkpoint, coalesce(k.id, k.name) AS key,
       m.attempts AS attempts, toFloat(m.attempts - m.failures) / m.attempts AS success_rate
ORDER BY key, round, checkpoint
