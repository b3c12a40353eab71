// Purpose: whether a scope is being deleted: true after `ace scope delete`
//   marked it and before the delete finished (one that was killed part-way
//   stays so until a rerun finishes it); such a scope is not data. No row
//   for an unknown scope.
// Parameters: $scope (string, "experiment/policy/checkpoint")
// Columns: deleting
// Mode: read
// Required: scope
// Names: $scope scope
// :params {scope: "experiment/policy/checkpoint"}
MATCH (sc:Scope {key: $scope})
RETURN coalesce(sc.deleting, false) AS deleting
