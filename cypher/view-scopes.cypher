// Purpose: every scope stored in the graph (experiment, policy, checkpoint),
//   newest first, with its totals; the dashboard's scope selector. A scope
//   being deleted is left out; incomplete: an ingest into the scope is running
//   or stopped part-way, so its counts and estimates may be half-fitted (the
//   dashboard shows no such scope, only the fix: rerun the ingest).
// Mode: read
// Parameters: none
// Columns: key, experiment, policy, checkpoint, round, created, rollouts,
//   rewarded, near_success, steps, incomplete
// Required: none
// :params {}
MATCH (sc:Scope)
WHERE NOT coalesce(sc.deleting, false)  // a delete that stopped part-way: not data
RETURN sc.key AS key, sc.experiment AS experiment, sc.policy AS policy, sc.checkpoint AS checkpoint,
       sc.round AS round, toString(sc.created) AS created, sc.rollouts AS rollouts,
       sc.rewarded AS rewarded, sc.near_success AS near_success, sc.steps AS steps,
       coalesce(sc.incomplete, false) AS incomplete
ORDER BY sc.created DESC, round DESC, key
