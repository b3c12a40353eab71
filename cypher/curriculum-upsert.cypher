// Purpose: store one curriculum round of an experiment: the state, smoothed
//   success and rounds in state of every unit
//   ((:Curriculum)-[:HAS_UNIT]->(:CurriculumUnit {id: experiment|key})) and
//   one (:CurriculumDecision {id: experiment|round|key}) per decision, linked
//   from its unit by DECIDED. Takes the curriculum's write lock first and
//   writes only when the stored round is still $previous_round, so two
//   concurrent steps cannot both advance it; a new curriculum starts at
//   $previous_round. No row comes back when the round moved on meanwhile.
//   Idempotent for one round: MERGE on the id keys.
// Parameters: $experiment (string), $previous_round (int), $round (int),
//   $scope (string: the scope whose evidence fed the round, or ""),
//   $config (string, JSON of the curriculum config), $prior (list of "a>b"),
//   $units (list of {key, kind, state, ema, rounds_in_state}),
//   $decisions (list of {round, unit, kind, from, to, reason})
// Columns: round, units, decisions
// Mode: write
MERGE (c:Curriculum {experiment: $experiment})
ON CREATE SET c.round = $previous_round, c.created = datetime()
SET c.updated = datetime()
WITH c
WHERE c.round = $previous_round
SET c.round = $round, c.config = $config, c.prior = $prior, c.last_scope = $scope,
    c.scopes = coalesce(c.scopes, []) + [$scope]
WITH c
CALL (c) {
  UNWIND $units AS row
  MERGE (u:CurriculumUnit {id: $experiment + '|' + row.key})
  SET u.experiment = $experiment, u.key = row.key, u.kind = row.kind, u.state = row.state,
      u.ema = row.ema, u.rounds_in_state = row.rounds_in_state, u.round = $round
  MERGE (c)-[:HAS_UNIT]->(u)
  RETURN count(u) AS units
}
CALL (c) {
  UNWIND $decisions AS row
  MATCH (u:CurriculumUnit {id: $experiment + '|' + row.unit})
  MERGE (d:CurriculumDecision {id: $experiment + '|' + toString(row.round) + '|' + row.unit})
  SET d.experiment = $experiment, d.round = row.round, d.unit = row.unit, d.kind = row.kind,
      d.from = row.from, d.to = row.to, d.reason = row.reason, d.scope = $scope
  MERGE (u)-[:DECIDED]->(d)
  RETURN count(d) AS decisions
}
RETURN c.round AS round, units, decisions
