// Purpose: the scopes stored for one experiment (each policy and checkpoint),
//   newest round first, with their totals; incomplete is true while an
//   ingest into the scope runs or after one stopped (rerun it to complete);
//   mode is free-running (rollouts) or gold-prefix (every oracle step scored).
// Parameters: $experiment (string)
// Columns: key, policy, checkpoint, round, rollouts, rewarded, near_success, incomplete, mode
// Mode: read
// Required: experiment
// Names: $experiment experiment
// :params {experiment: "demo"}
MATCH (sc:Scope {experiment: $experiment})
RETURN sc.key AS key, sc.policy AS policy, sc.checkpoint AS checkpoint, sc.round AS round,
       sc.rollouts AS rollouts, sc.rewarded AS rewarded, sc.near_success AS near_success,
       coalesce(sc.incomplete, false) AS incomplete, coalesce(sc.mode, 'free-running') AS mode
ORDER BY round DESC, key
