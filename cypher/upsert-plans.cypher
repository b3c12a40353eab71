// Purpose: store synthesis plans of an experiment (target edge, strategy,
//   strength, depth, domain, style, status, round statistics and reflection
//   history), linked to the tools of their target edge. Idempotent.
// Parameters: $experiment (string), $rows (list of plan maps with id, from_tool,
//   to_tool and the other properties)
// Columns: plans
// Mode: write
UNWIND $rows AS row
MERGE (p:Plan {id: $experiment + '|' + row.id})
SET p += row, p.id = $experiment + '|' + row.id, p.plan = row.id, p.experiment = $experiment
WITH p, row
OPTIONAL MATCH (a:Tool {name: row.from_tool})
OPTIONAL MATCH (b:Tool {name: row.to_tool})
FOREACH (_ IN CASE WHEN a IS NULL THEN [] ELSE [1] END | MERGE (p)-[:TARGETS_FROM]->(a))
FOREACH (_ IN CASE WHEN b IS NULL THEN [] ELSE [1] END | MERGE (p)-[:TARGETS_TO]->(b))
RETURN count(p) AS plans
