// Purpose: create the rollouts of one ingest batch with the oracle steps each
//   reached, in order (Rollout-[:OF_TASK]->Task, Rollout-[:HAS_STEP]->Step,
//   Step-[:NEXT]->Step; a step has its tool, skills and outcome "success" or
//   "fail"). A rollout already stored with the same content (its digest) is
//   left alone (idempotent ingest); one stored with other content is a
//   conflict: it is returned with conflict = true, and the caller rolls the
//   batch back (one id, one rollout per scope). Returns the ids this batch
//   created, whose counts are then added, and the conflicts.
// Parameters: $batch (string, unique per batch), $rows (list of {id, task_id, task_key,
//   props: map of Rollout properties (digest: null or the content digest), steps: [{flat, turn, index, tool,
//   skills, outcome, nll}]}); nll (null outside gold-prefix scopes) is the gold
//   answer's mean negative log-likelihood per token
// Columns: id, conflict
// Mode: write
UNWIND $rows AS row
OPTIONAL MATCH (t:Task {key: row.task_key})
MERGE (r:Rollout {id: row.id})
ON CREATE SET r += row.props, r.batch = $batch
WITH r, row, t, r.batch = $batch AS created
// a rollout stored before digests were kept (or given none) is not compared
WHERE created OR coalesce(r.digest <> row.props.digest, false)
FOREACH (_ IN CASE WHEN created AND t IS NOT NULL THEN [1] ELSE [] END | CREATE (r)-[:OF_TASK]->(t))
WITH r, row, created
CALL (r, row, created) {
  UNWIND CASE WHEN created THEN row.steps ELSE [] END AS s
  // each step also carries prev_tool / prev_skills: the previous oracle call's tool and skills
  // (null / [] for the first call), which the composition estimator reads (estimate-cells)
  CREATE (r)-[:HAS_STEP]->(st:Step {flat: s.flat, turn: s.turn, index: s.index, tool: s.tool,
                                    skills: s.skills, outcome: s.outcome, nll: s.nll,
                                    prev_tool: s.prev_tool, prev_skills: s.prev_skills})
  RETURN collect(st) AS chain
}
FOREACH (i IN range(0, size(chain) - 2) |
  FOREACH (a IN [chain[i]] | FOREACH (b IN [chain[i + 1]] | CREATE (a)-[:NEXT]->(b))))
RETURN r.id AS id, NOT created AS conflict
