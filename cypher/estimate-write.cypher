// Purpose: store the composition estimator's result on the COMPOSES edges of
//   one scope and level (ace_graph.estimate.estimate_scope): the composition
//   and tool effects (log-odds) with their bounds, the counts of the view they
//   were fitted on, the verdict (composition | ambiguous | tool | ok), what
//   evidence is missing, and the scopes of the view. Edges of the scope the
//   fit did not cover lose an earlier verdict. The scope records the view.
// Parameters: $scope (string), $level ("skill" or "tool"), $rows (list of
//   {from, to, n, failures, n_without, failures_without, effect, effect_low,
//   effect_high, tool_effect, tool_low, tool_high, combined_low, verdict,
//   missing, view}), $meta (map {view, config})
// Columns: edges
// Mode: write
MATCH (sc:Scope {key: $scope})
SET sc.estimate_view = $meta.view, sc.estimate_config = $meta.config, sc.estimated = datetime()
WITH sc
CALL (sc) {
  MATCH ()-[c:COMPOSES {scope: $scope, level: $level}]->()
  REMOVE c.verdict, c.est_effect, c.est_effect_low, c.est_effect_high, c.est_tool_effect, c.est_tool_low,
         c.est_tool_high, c.est_combined_low, c.est_n, c.est_failures, c.est_n_without,
         c.est_failures_without, c.est_missing, c.est_view
  RETURN count(c) AS cleared
}
UNWIND $rows AS row
CALL (row) {
  MATCH (:Tool {name: row.from})-[c:COMPOSES {scope: $scope, level: $level}]->(:Tool {name: row.to})
  WHERE $level = 'tool'
  RETURN c
  UNION
  MATCH (:Skill {id: row.from})-[c:COMPOSES {scope: $scope, level: $level}]->(:Skill {id: row.to})
  WHERE $level = 'skill'
  RETURN c
}
SET c.verdict = row.verdict, c.est_effect = row.effect, c.est_effect_low = row.effect_low,
    c.est_effect_high = row.effect_high, c.est_tool_effect = row.tool_effect, c.est_tool_low = row.tool_low,
    c.est_tool_high = row.tool_high, c.est_combined_low = row.combined_low, c.est_n = row.n,
    c.est_failures = row.failures, c.est_n_without = row.n_without,
    c.est_failures_without = row.failures_without, c.est_missing = row.missing, c.est_view = row.view
RETURN count(c) AS edges
