// Purpose: every stored scope (experiment/policy/checkpoint), of one
//   experiment or of all when $experiment is null, with its round and
//   totals and how many tool and skill compositions it measured. Newest
//   round first within an experiment. mode: free-running (rollouts) or
//   gold-prefix (every oracle step scored with the oracle's prefix). deleting: a
//   delete of the scope stopped part-way (not data; rerun `ace scope delete`).
//   incomplete: an ingest into the scope is running or stopped part-way, so
//   its estimates may be half-fitted (not data; rerun the ingest).
// Parameters: $experiment (string, or null for every experiment)
// Columns: experiment, key, policy, checkpoint, round, rollouts, rewarded,
//   near_success, steps, compositions_tool, compositions_skill, mode, deleting, incomplete
// Mode: read
// Required: none
// Names: $experiment experiment (null: every experiment)
// :params {experiment: null}
MATCH (sc:Scope)
WHERE $experiment IS NULL OR sc.experiment = $experiment
CALL (sc) {
  OPTIONAL MATCH ()-[c:COMPOSES {scope: sc.key}]->()
  RETURN sum(CASE WHEN c.level = 'tool' THEN 1 ELSE 0 END) AS compositions_tool,
         sum(CASE WHEN c.level = 'skill' THEN 1 ELSE 0 END) AS compositions_skill
}
RETURN sc.experiment AS experiment, sc.key AS key, sc.policy AS policy, sc.checkpoint AS checkpoint,
       sc.round AS round, sc.rollouts AS rollouts, sc.rewarded AS rewarded,
       sc.near_success AS near_success, sc.steps AS steps, compositions_tool, compositions_skill,
       coalesce(sc.mode, 'free-running') AS mode, coalesce(sc.deleting, false) AS deleting,
       coalesce(sc.incomplete, false) AS incomplete
ORDER BY experiment, round DESC, key
