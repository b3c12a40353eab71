// Purpose: every skill id (level "skill") or tool name (level "tool") the
//   graph holds, for checking a name a query is given (ace_graph.names): a
//   name that is not here is refused with the nearest of these.
// Parameters: $level ("skill" or "tool")
// Columns: name
// Mode: read
// Required: none
// Names: $level level
// :params {level: "tool"}
CALL () {
  MATCH (k:Skill) WHERE $level = 'skill'
  RETURN k.id AS name
  UNION
  MATCH (t:Tool) WHERE $level = 'tool'
  RETURN t.name AS name
}
RETURN name
ORDER BY name
