// Purpose: add one batch's skill counts to the scope: per skill, attempts and
//   failures over reached oracle steps (Scope-[:MEASURED]->Skill), and per
//   adjacent pair a→b, how often b was reached right after a, how often it
//   failed there, and how often the pair occurs (a-[:COMPOSES {scope}]->b),
//   with up to 5 near-success examples. Increments take the write lock
//   before reading, so concurrent ingests lose nothing.
// Parameters: $scope (string, "experiment/policy/checkpoint"), $nodes (list of {key, attempts, failures,
//   as_pred, as_succ}), $edges (list of {from, to, n, failures, cooc, examples})
// Columns: nodes, edges
// Mode: write
MATCH (sc:Scope {key: $scope})
CALL (sc) {
  UNWIND $nodes AS row
  MATCH (k:Skill {id: row.key})
  MERGE (sc)-[m:MEASURED]->(k)
  ON CREATE SET m.level = 'skill', m.attempts = 0, m.failures = 0, m.as_pred = 0, m.as_succ = 0
  SET m.attempts = m.attempts + row.attempts, m.failures = m.failures + row.failures,
      m.as_pred = m.as_pred + row.as_pred, m.as_succ = m.as_succ + row.as_succ
  RETURN count(m) AS nodes
}
CALL () {
  UNWIND $edges AS row
  MATCH (a:Skill {id: row.from}), (b:Skill {id: row.to})
  MERGE (a)-[c:COMPOSES {scope: $scope, level: 'skill'}]->(b)
  ON CREATE SET c.n = 0, c.failures = 0, c.cooc = 0, c.examples = []
  SET c.n = c.n + row.n, c.failures = c.failures + row.failures, c.cooc = c.cooc + row.cooc,
      c.examples = (c.examples + row.examples)[0..5]
  RETURN count(c) AS edges
}
RETURN nodes, edges
