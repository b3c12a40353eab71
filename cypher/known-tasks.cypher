// Purpose: the key ("source:id") of every stored task, for checking a task
//   key a query is given (ace_graph.names).
// Parameters: none
// Columns: name
// Mode: read
// Required: none
// :params {}
MATCH (t:Task)
RETURN t.key AS name
ORDER BY name
