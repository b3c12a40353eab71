// Purpose: every scope stored in the graph (experiment, policy, checkpoint),
//   newest first, with its totals; the dashboard's scope selector.
// Mode: read
// Parameters: none
// Columns: key, experiment, policy, checkpoint, round, created, rollouts,
//   rewarded, near_success, steps
// Required: none
// :params {}
MATCH (sc:Scope)
WHERE NOT coalesce(sc.deleting, false)  // a delete that stopped part-way: not data
RETURN sc.key AS key, sc.experiment AS experiment, sc.policy AS policy, sc.checkpoint AS checkpoint,
       sc.round AS round, toString(sc.created) AS created, sc.rollouts AS rollouts,
       sc.rewarded AS rewarded, sc.near_success AS near_success, sc.steps AS steps
ORDER BY sc.created DESC, round DESC, key
