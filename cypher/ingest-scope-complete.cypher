// Purpose: mark a scope complete when an ingest into it ended without error.
//   Batches mark it incomplete as they commit (ingest-scope-totals), so an
//   ingest that stops part-way (a bad line, a crash, kill -9) leaves the mark,
//   and rerunning it (stored rollouts are skipped) clears it.
// Parameters: $key (string)
// Columns: key, rollouts
// Mode: write
MATCH (sc:Scope {key: $key})
SET sc.incomplete = false
RETURN sc.key AS key, sc.rollouts AS rollouts
