// Purpose: the content digests of the stored rollouts of a scope among the
//   given ids (ace_graph.ingest.content_digest of what the rollout file said),
//   which `ace ingest` compares before it stores anything: an id stored with
//   other content is refused, the same content (a rerun) is skipped. Rollouts
//   stored before digests were kept have none and are left out.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $ids (list of
//   strings, the rollouts' own ids)
// Columns: rollout, digest
// Mode: read
// Required: scope, ids
// Names: $scope scope, $ids rollout
// :params {scope: "demo/sim/round-0", ids: ["sim-0", "sim-1"]}
UNWIND $ids AS rid
MATCH (r:Rollout {id: $scope + '/' + rid})
WHERE r.digest IS NOT NULL
RETURN r.rollout_id AS rollout, r.digest AS digest
