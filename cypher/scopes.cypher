// Purpose: the scopes stored for one experiment (each policy and checkpoint),
//   newest round first, with their totals.
// Parameters: $experiment (string)
// Columns: key, policy, checkpoint, round, rollouts, rewarded, near_success
// Mode: read
// Required: experiment
// :params {experiment: "demo"}
MATCH (sc:Scope {experiment: $experiment})
RETURN sc.key AS key, sc.policy AS policy, sc.checkpoint AS checkpoint, sc.round AS round,
       sc.rollouts AS rollouts, sc.rewarded AS rewarded, sc.near_success AS near_success
ORDER BY round DESC, key
