// Purpose: create or update the skill taxonomy, the tools, and which skills each
//   tool exercises (from ace_graph/skills.toml). Idempotent. A tool given
//   without a class (or description) keeps the one stored (a τ² tool's class is
//   known only when τ² tasks are ingested).
// Parameters: $skills (list of {id, family, description}),
//   $tools (list of {name, class, description, skills: [skill id]})
// Columns: skills, tools
// Mode: write
UNWIND $skills AS s
MERGE (k:Skill {id: s.id})
SET k.family = s.family, k.description = s.description
WITH count(*) AS skills
UNWIND $tools AS t
MERGE (x:Tool {name: t.name})
SET x.class = coalesce(t.class, x.class), x.description = coalesce(t.description, x.description, ''),
    x.skills = t.skills
WITH skills, x, t
CALL (x, t) {
  UNWIND t.skills AS sid
  MATCH (k:Skill {id: sid})
  MERGE (x)-[:EXERCISES]->(k)
  RETURN count(*) AS linked
}
RETURN skills, count(DISTINCT x) AS tools
