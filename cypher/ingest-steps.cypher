// Purpose: store the oracle steps each new rollout reached, in order
//   (Rollout-[:HAS_STEP]->Step, Step-[:NEXT]->Step), with their tool, skills
//   and outcome ("success" or "fail").
// Parameters: $rows (list of {rollout, steps: [{id, flat, turn, index, tool,
//   skills, outcome, call}]})
// Columns: steps
UNWIND $rows AS row
MATCH (r:Rollout {id: row.rollout})
CALL (r, row) {
  UNWIND row.steps AS s
  CREATE (st:Step)
  SET st = s
  CREATE (r)-[:HAS_STEP]->(st)
  RETURN collect(st) AS chain
}
FOREACH (i IN range(0, size(chain) - 2) |
  FOREACH (a IN [chain[i]] | FOREACH (b IN [chain[i + 1]] | CREATE (a)-[:NEXT]->(b))))
RETURN sum(size(chain)) AS steps
