// Purpose: the curriculum of one experiment: every unit (skill or
//   composition) with its state, smoothed success (ema), rounds spent in the
//   state, the curriculum's round, the scope it last read and every scope it
//   has read, and the unit's
//   latest decision. A curriculum without units yields one row whose unit
//   columns are null. Skills first, then compositions.
// Parameters: $experiment (string)
// Columns: kind, key, state, ema, rounds_in_state, round, last_scope,
//   last_round, last_from, last_to, last_reason, scopes
// Mode: read
// Required: experiment
// Names: $experiment experiment
// :params {experiment: "demo"}
MATCH (c:Curriculum {experiment: $experiment})
OPTIONAL MATCH (c)-[:HAS_UNIT]->(u:CurriculumUnit)
OPTIONAL MATCH (u)-[:DECIDED]->(d:CurriculumDecision)
WITH c, u, d
ORDER BY d.round DESC
WITH c, u, collect(d)[0] AS last
RETURN u.kind AS kind, u.key AS key, u.state AS state, u.ema AS ema,
       u.rounds_in_state AS rounds_in_state, c.round AS round, c.last_scope AS last_scope,
       last.round AS last_round, last.from AS last_from, last.to AS last_to, last.reason AS last_reason,
       coalesce(c.scopes, []) AS scopes
ORDER BY kind DESC, key
