// Purpose: the stored content fingerprint of each given task (null when the
//   task is not stored or was stored without one), so an upsert can skip the
//   tasks that are already up to date. Tasks are keyed by "source:id".
// Parameters: $keys (list of task keys, "source:id")
// Columns: key, fingerprint
// Mode: read
UNWIND $keys AS key
MATCH (t:Task {key: key})
RETURN t.key AS key, t.fingerprint AS fingerprint
