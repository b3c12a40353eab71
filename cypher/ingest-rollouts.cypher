// Purpose: create the rollouts of one ingest batch with the oracle steps each
//   reached, in order (Rollout-[:OF_TASK]->Task, Rollout-[:HAS_STEP]->Step,
//   Step-[:NEXT]->Step; a step has its tool, skills and outcome "success" or
//   "fail"). A rollout already stored is left alone (idempotent ingest).
//   Returns the ids this batch created, whose counts are then added.
// Parameters: $batch (string, unique per batch), $rows (list of {id, task_id, task_key,
//   props: map of Rollout properties, steps: [{flat, turn, index, tool,
//   skills, outcome, nll}]}); nll (null outside gold-prefix scopes) is the gold
//   answer's mean negative log-likelihood per token
// Columns: id
// Mode: write
UNWIND $rows AS row
OPTIONAL MATCH (t:Task {key: row.task_key})
MERGE (r:Rollout {id: row.id})
ON CREATE SET r += row.props, r.batch = $batch
WITH r, row, t
WHERE r.batch = $batch
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END | CREATE (r)-[:OF_TASK]->(t))
WITH r, row
CALL (r, row) {
  UNWIND row.steps AS s
  // each step also carries prev_tool / prev_skills: the previous oracle call's tool and skills
  // (null / [] for the first call), which the composition estimator reads (estimate-cells)
  CREATE (r)-[:HAS_STEP]->(st:Step {flat: s.flat, turn: s.turn, index: s.index, tool: s.tool,
                                    skills: s.skills, outcome: s.outcome, nll: s.nll,
                                    prev_tool: s.prev_tool, prev_skills: s.prev_skills})
  RETURN collect(st) AS chain
}
FOREACH (i IN range(0, size(chain) - 2) |
  FOREACH (a IN [chain[i]] | FOREACH (b IN [chain[i + 1]] | CREATE (a)-[:NEXT]->(b))))
RETURN r.id AS id
