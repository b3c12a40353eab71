// Purpose: every decision the curriculum of one experiment took, per round:
//   which unit (skill or composition) moved from which state to which, why,
//   and the scope whose evidence drove it. Newest round first.
// Mode: read
// Parameters: $experiment (string)
// Columns: round, unit, kind, from, to, reason, scope
// Required: experiment
// Names: $experiment experiment
// :params {experiment: "demo"}
MATCH (d:CurriculumDecision {experiment: $experiment})
RETURN d.round AS round, d.unit AS unit, d.kind AS kind, d.from AS from, d.to AS to,
       d.reason AS reason, d.scope AS scope
ORDER BY round DESC, unit
