// Purpose: create the rollouts of one ingest batch; a rollout already stored
//   is left alone (idempotent ingest). Returns the ids created by this batch,
//   whose steps and counts are then added.
// Parameters: $batch (string, unique per batch), $rows (list of {id, task_id,
//   props: map of Rollout properties})
// Columns: id
UNWIND $rows AS row
MERGE (r:Rollout {id: row.id})
ON CREATE SET r += row.props, r.batch = $batch
WITH r, row
WHERE r.batch = $batch
OPTIONAL MATCH (t:Task {id: row.task_id})
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END | CREATE (r)-[:OF_TASK]->(t))
RETURN r.id AS id
