// Purpose: delete one scope and everything stored under it: its rollouts
//   with their steps, its MEASURED capability counts and its COMPOSES
//   composition counts. Tasks, skills, tools, prior edges and curricula are
//   left alone. Returns what was deleted (all zeros for an unknown scope).
// Parameters: $scope (string, "experiment/policy/checkpoint")
// Columns: scopes, rollouts, steps, compositions
// Mode: write
OPTIONAL MATCH (r:Rollout {scope: $scope})
OPTIONAL MATCH (r)-[:HAS_STEP]->(s:Step)
WITH collect(DISTINCT r) AS rollouts, collect(DISTINCT s) AS steps
CALL (steps) { UNWIND steps AS s DETACH DELETE s }
CALL (rollouts) { UNWIND rollouts AS r DETACH DELETE r }
WITH size(rollouts) AS rollouts, size(steps) AS steps
OPTIONAL MATCH ()-[c:COMPOSES {scope: $scope}]->()
WITH rollouts, steps, collect(c) AS comps
CALL (comps) { UNWIND comps AS c DELETE c }
WITH rollouts, steps, size(comps) AS compositions
OPTIONAL MATCH (sc:Scope {key: $scope})
WITH rollouts, steps, compositions, collect(sc) AS scs
CALL (scs) { UNWIND scs AS sc DETACH DELETE sc }
RETURN size(scs) AS scopes, rollouts, steps, compositions
