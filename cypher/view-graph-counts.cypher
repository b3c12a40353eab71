// Purpose: what the graph holds overall: skills, tools, tasks (seed and
//   synthesized), scopes, plans. Counts come from the label index, so this is
//   cheap on any size of graph.
// Mode: read
// Parameters: none
// Columns: skills, tools, tasks, synthesized_tasks, scopes, plans
// Required: none
// :params {}
CALL () { MATCH (k:Skill) RETURN count(k) AS skills }
CALL () { MATCH (t:Tool) RETURN count(t) AS tools }
CALL () { MATCH (t:Task) RETURN count(t) AS tasks }
CALL () { MATCH (:Plan)-[:PRODUCED]->(t:Task) RETURN count(DISTINCT t) AS synthesized_tasks }
CALL () { MATCH (s:Scope) RETURN count(s) AS scopes }
CALL () { MATCH (p:Plan) RETURN count(p) AS plans }
RETURN skills, tools, tasks, synthesized_tasks, scopes, plans
