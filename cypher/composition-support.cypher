// Purpose: why a composition query of one scope may return nothing: how many
//   compositions a→b the scope measured at a level, how many of them have
//   less support than $min_support (b reached right after a fewer times), and
//   the largest support seen.
// Parameters: $scope (string, "experiment/policy/checkpoint"; see
//   `ace scopes`), $level ("skill" or "tool"), $min_support (int)
// Columns: compositions, below_min_support, max_support
// Mode: read
// Required: scope
// Names: $scope scope, $level level
// :params {scope: "demo/sim/round-0", level: "tool", min_support: 20}
OPTIONAL MATCH ()-[c:COMPOSES {scope: $scope, level: $level}]->()
WHERE c.n > 0
RETURN count(c) AS compositions, sum(CASE WHEN c.n < $min_support THEN 1 ELSE 0 END) AS below_min_support,
       coalesce(max(c.n), 0) AS max_support
