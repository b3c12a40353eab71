// Purpose: the tools and skills of one environment, for the dashboard's
//   environment filter. A tool belongs to an environment when a task of it
//   (by its source) uses the tool, or the tool's class names the environment
//   ("NAME" or "NAME:GROUP", as τ²-bench's "tau2:airline"); a tool whose class
//   names none (BFCL's API classes) belongs to the first environment listed.
//   A tool can be in two (list_all_airports is in BFCL's TravelAPI and in τ²
//   airline). A skill belongs to the environments of the tools that exercise
//   it. family is the skill's family, or the tool's class ("(none)" when it
//   has none), as the profile views name them. A Tool node is one per name
//   with one class: a tool the first environment also has counts as another's
//   only once a stored task of that environment uses it (the dashboard
//   filters rows by this only in a scope of both environments).
// Parameters: $environment (one of $environments), $environments (list of
//   environment names, the default first: ace_env.environments.environment_names())
// Columns: level, key, family
// Mode: read
// Required: environment, environments
// Names: $environment environment, $environments environment
// :params {environment: "tau2", environments: ["bfcl", "tau2"]}
MATCH (x:Tool)
OPTIONAL MATCH (t:Task)-[:USES]->(x)
WHERE t.source IN $environments
WITH x, collect(DISTINCT t.source) AS used,
     CASE WHEN x.class IS NULL THEN null
          ELSE coalesce(head([e IN $environments WHERE x.class = e OR x.class STARTS WITH e + ':']),
                        $environments[0]) END AS by_class
WHERE $environment IN used OR $environment = by_class
CALL (x) {
  RETURN 'tool' AS level, x.name AS key, coalesce(x.class, '(none)') AS family
  UNION
  MATCH (x)-[:EXERCISES]->(k:Skill)
  RETURN 'skill' AS level, k.id AS key, coalesce(k.family, '(none)') AS family
}
RETURN DISTINCT level, key, family
ORDER BY level, key
