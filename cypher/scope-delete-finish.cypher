// Purpose: last step of deleting a scope: remove its Scope node with its
//   MEASURED capability counts and probe links, once its rollouts and
//   compositions are gone (scope-delete, scope-delete-compositions). Tasks,
//   skills, tools, prior edges and curricula are left alone.
// Parameters: $scope (string, "experiment/policy/checkpoint")
// Columns: scopes
// Mode: write
OPTIONAL MATCH (sc:Scope {key: $scope})
WITH collect(sc) AS scs
FOREACH (sc IN scs | DETACH DELETE sc)
RETURN size(scs) AS scopes
