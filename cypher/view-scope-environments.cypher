// Purpose: the environments of every scope ("experiment/policy/checkpoint"),
//   for the dashboard's environment filter: those of the tools its reached
//   steps used (tool level), each tool's as view-environment-members says
//   ("bfcl", "tau2"). A tool both environments have (list_all_airports)
//   decides only for a scope that used no tool of one environment alone; a
//   scope none of whose tools has an environment has none (it shows under
//   "all" only).
// Parameters: none
// Columns: key, environments
// Mode: read
// Required: none
// :params {}
MATCH (x:Tool)
OPTIONAL MATCH (t:Task)-[:USES]->(x)
WHERE t.source IN ['bfcl', 'tau2']
WITH x, collect(DISTINCT t.source) AS used,
     CASE WHEN x.class IS NULL THEN null
          WHEN x.class = 'tau2' OR x.class STARTS WITH 'tau2:' THEN 'tau2'
          ELSE 'bfcl' END AS by_class
WITH x, [e IN ['bfcl', 'tau2'] WHERE e IN used OR e = by_class] AS envs
WHERE size(envs) > 0
MATCH (sc:Scope)-[m:MEASURED]->(x)
WHERE m.level = 'tool' AND m.attempts > 0 AND NOT coalesce(sc.deleting, false) AND NOT coalesce(sc.incomplete, false)
WITH sc, collect(envs) AS per_tool
WITH sc, [e IN ['bfcl', 'tau2'] WHERE [e] IN per_tool] AS alone,
     [e IN ['bfcl', 'tau2'] WHERE any(v IN per_tool WHERE e IN v)] AS shared
RETURN sc.key AS key, CASE WHEN size(alone) > 0 THEN alone ELSE shared END AS environments
ORDER BY key
