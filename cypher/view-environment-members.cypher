// Purpose: the tools and skills of one environment, for the dashboard's
//   environment filter. A tool is a τ²-bench tool when its class is "tau2" or
//   "tau2:DOMAIN" or a τ² task (source "tau2") uses it, and a BFCL tool when it
//   has another class (BFCL's API class) or a BFCL task uses it; a tool can be
//   both (list_all_airports is in BFCL's TravelAPI and in τ² airline). A skill
//   belongs to the environments of the tools that exercise it. family is the
//   skill's family, or the tool's class ("(none)" when it has none), as the
//   profile views name them. A Tool node is one per name with one class: a
//   tool BFCL also has counts as τ² only once a stored τ² task's gold uses it
//   (the dashboard filters rows by this only in a scope of both environments).
// Parameters: $environment ("bfcl" or "tau2")
// Columns: level, key, family
// Mode: read
// Required: environment
// Names: $environment environment
// :params {environment: "tau2"}
MATCH (x:Tool)
OPTIONAL MATCH (t:Task)-[:USES]->(x)
WHERE t.source IN ['bfcl', 'tau2']
WITH x, collect(DISTINCT t.source) AS used,
     CASE WHEN x.class IS NULL THEN null
          WHEN x.class = 'tau2' OR x.class STARTS WITH 'tau2:' THEN 'tau2'
          ELSE 'bfcl' END AS by_class
WHERE $environment IN used OR $environment = by_class
CALL (x) {
  RETURN 'tool' AS level, x.name AS key, coalesce(x.class, '(none)') AS family
  UNION
  MATCH (x)-[:EXERCISES]->(k:Skill)
  RETURN 'skill' AS level, k.id AS key, coalesce(k.family, '(none)') AS family
}
RETURN DISTINCT level, key, family
ORDER BY level, key
