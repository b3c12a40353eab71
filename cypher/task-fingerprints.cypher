// Purpose: the stored content fingerprint of each given task (null when the
//   task is not stored or was stored without one), so an upsert can skip the
//   tasks that are already up to date. Tasks are keyed by "source:id". One row
//   of two parallel lists (one record to decode, not one per task).
// Parameters: $keys (list of task keys, "source:id")
// Columns: keys, fingerprints
// Mode: read
// Required: keys
// Names: $keys task
// :params {keys: ["bfcl:multi_turn_base_0"]}
UNWIND $keys AS key
MATCH (t:Task {key: key})
RETURN collect(t.key) AS keys, collect(t.fingerprint) AS fingerprints
