// Purpose: the environments of every scope ("experiment/policy/checkpoint"),
//   for the dashboard's environment filter: those of the tools its reached
//   steps used (tool level), each tool's as view-environment-members says
//   (a task of the environment, by its source, uses it, or its class names the
//   environment; a tool whose class names none belongs to the first
//   environment listed). A tool two environments have decides only for a
//   scope that used no tool of one environment alone; a scope none of whose
//   tools has an environment has none (it shows under "all" only).
// Parameters: $environments (list of environment names, the default first:
//   ace_env.environments.environment_names(); `ace query` and the query console
//   fill it in from the registry)
// Columns: key, environments
// Mode: read
// Required: environments
// Names: $environments environment
// :params {environments: ["bfcl", "tau2"]}
MATCH (x:Tool)
OPTIONAL MATCH (t:Task)-[:USES]->(x)
WHERE t.source IN $environments
WITH x, collect(DISTINCT t.source) AS used,
     CASE WHEN x.class IS NULL THEN null
          ELSE coalesce(head([e IN $environments WHERE x.class = e OR x.class STARTS WITH e + ':']),
                        $environments[0]) END AS by_class
WITH x, [e IN $environments WHERE e IN used OR e = by_class] AS envs
WHERE size(envs) > 0
MATCH (sc:Scope)-[m:MEASURED]->(x)
WHERE m.level = 'tool' AND m.attempts > 0 AND NOT coalesce(sc.deleting, false) AND NOT coalesce(sc.incomplete, false)
WITH sc, collect(envs) AS per_tool
WITH sc, [e IN $environments WHERE [e] IN per_tool] AS alone,
     [e IN $environments WHERE any(v IN per_tool WHERE e IN v)] AS shared
RETURN sc.key AS key, CASE WHEN size(alone) > 0 THEN alone ELSE shared END AS environments
ORDER BY key
