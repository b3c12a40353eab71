// Purpose: first step of deleting a scope: mark it as being deleted
//   (deleting = true), so that nothing reads it as data from here on and a
//   delete that was killed part-way is finished by running it again. Returns
//   the scope's totals before the delete (no row for an unknown scope).
// Parameters: $scope (string, "experiment/policy/checkpoint")
// Columns: scope, rollouts, steps
// Mode: write
MATCH (sc:Scope {key: $scope})
SET sc.deleting = true
RETURN sc.key AS scope, sc.rollouts AS rollouts, sc.steps AS steps
