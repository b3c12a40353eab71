// Purpose: the stored content fingerprint of each given task (null when the
//   task is not stored or was stored without one), so an upsert can skip the
//   tasks that are already up to date.
// Parameters: $ids (list of task ids)
// Columns: id, fingerprint
UNWIND $ids AS id
MATCH (t:Task {id: id})
RETURN t.id AS id, t.fingerprint AS fingerprint
