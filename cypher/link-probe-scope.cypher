// Purpose: link a probe scope to the scope it probes ((S)-[:PROBED_BY]->(P)),
//   so S's view (and its estimates) include P's rollouts. Both scopes must
//   exist; linking twice changes nothing.
// Parameters: $scope (string), $probe (string)
// Columns: scope, probe
// Mode: write
MATCH (sc:Scope {key: $scope}), (p:Scope {key: $probe})
MERGE (sc)-[:PROBED_BY]->(p)
SET p.probe_of = $scope
RETURN sc.key AS scope, p.key AS probe
