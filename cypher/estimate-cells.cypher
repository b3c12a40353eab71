// Purpose: the observations the composition estimator fits on: reached
//   oracle steps of the given scopes counted per (task, unit, previous units),
//   unit being the step's tool (level "tool"; steps without a tool skipped) or
//   each of its skills (level "skill"), the previous units those of the
//   previous oracle call (stored on the step at ingest). Reads Step nodes.
//   Steps stored before ingest kept the previous call (no prev_skills) are
//   counted as `legacy`: their context is unknown.
// Parameters: $scopes (list of scope keys), $level ("skill" or "tool")
// Columns: task, unit, prevs, n, failures, legacy
// Mode: read
// Required: scopes, level
// Names: $scopes scope, $level level
// :params {scopes: ["demo/sim/round-0"], level: "tool"}
MATCH (r:Rollout) WHERE r.scope IN $scopes
MATCH (r)-[:HAS_STEP]->(st:Step)
WHERE $level = 'skill' OR st.tool IS NOT NULL
UNWIND CASE $level WHEN 'skill' THEN st.skills ELSE [st.tool] END AS unit
WITH r.task_id AS task, unit,
     CASE $level WHEN 'skill' THEN coalesce(st.prev_skills, [])
          ELSE CASE WHEN st.prev_tool IS NULL THEN [] ELSE [st.prev_tool] END END AS prevs,
     CASE st.outcome WHEN 'fail' THEN 1 ELSE 0 END AS failed, st.prev_skills IS NULL AS legacy
RETURN task, unit, prevs, count(*) AS n, sum(failed) AS failures, legacy
ORDER BY task, unit
