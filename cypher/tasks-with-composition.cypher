// Purpose: seed tasks whose oracle contains the composition $from→$to
//   (adjacent calls), at tool or skill level.
// Parameters: $level ("skill" or "tool"), $from (string), $to (string),
//   $limit (int)
// Columns: task_id, source, category, n_steps
// Mode: read
// Required: from, to
// Names: $level level, $from node, $to node
// :params {level: "tool", from: "place_order", to: "get_order_details", limit: 20}
MATCH (:Composition {key: $level + ':' + $from + '>' + $to})<-[:CONTAINS]-(t:Task)
RETURN t.id AS task_id, t.source AS source, t.category AS category, t.n_steps AS n_steps
ORDER BY task_id
LIMIT $limit
