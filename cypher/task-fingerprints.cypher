// Purpose: the stored content fingerprint of each given task (null when the
//   task is not stored or was stored without one), so an upsert can skip the
//   tasks that are already up to date. One row of two parallel lists (one
//   record to decode, not one per task).
// Parameters: $ids (list of task ids)
// Columns: ids, fingerprints
UNWIND $ids AS id
MATCH (t:Task {id: id})
RETURN collect(t.id) AS ids, collect(t.fingerprint) AS fingerprints
