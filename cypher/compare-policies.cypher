// Purpose: two or more scopes (policies, or checkpoints of one policy) side
//   by side. Rows of kind "composition": every composition a→b (b reached
//   right after a) that some of the scopes reached at least $min_support
//   times, with one row per scope (n 0 where that scope never reached it):
//   n, failures, success (1 - failures / n, null at n 0) and its 95% Wilson
//   interval ([0, 1] at n 0). Rows of kind "capability": every skill (or
//   tool) some scope reached at least $min_support times, the same figures per
//   scope, its key in `to` (`from` is null). Weakest first: compositions
//   (skills) in order of their lowest success in any scope that reached them
//   $min_support times, at most $limit of each kind; within one, the scopes
//   in the order given. Give scopes of one environment: the rows are whatever
//   the scopes reached, of every environment they hold.
// Parameters: $scopes (list of scope keys, each "experiment/policy/checkpoint"),
//   $level ("skill" or "tool"), $min_support (int, reached steps in the
//   best-supported scope), $limit (int, compositions and skills shown, each)
// Columns: kind, from, to, scope, n, failures, success, ci_low, ci_high
// Mode: read
// Required: scopes
// Names: $scopes scope, $level level
// :params {scopes: ["demo/sim/round-0", "demo/sim/round-1"], level: "tool", min_support: 20, limit: 20}
CALL () {
  UNWIND range(0, size($scopes) - 1) AS i
  MATCH (sc:Scope {key: $scopes[i]})
  WHERE NOT coalesce(sc.deleting, false) AND NOT coalesce(sc.incomplete, false)
  MATCH (a)-[c:COMPOSES {scope: sc.key, level: $level}]->(b)
  WHERE c.n > 0
  WITH coalesce(a.id, a.name) AS from, coalesce(b.id, b.name) AS to,
       collect({i: i, n: c.n, failures: c.failures}) AS seen, max(c.n) AS most,
       min(CASE WHEN c.n >= $min_support THEN 1.0 - toFloat(c.failures) / c.n END) AS weakest
  WHERE most >= $min_support
  WITH from, to, seen, weakest, most
  ORDER BY weakest, most DESC, from, to
  LIMIT $limit
  WITH collect({from: from, to: to, seen: seen}) AS picked
  UNWIND range(0, size(picked) - 1) AS rank
  UNWIND range(0, size($scopes) - 1) AS i
  WITH picked[rank] AS row, rank, i
  RETURN 'composition' AS kind, row.from AS from, row.to AS to, rank, i,
         [s IN row.seen WHERE s.i = i] AS hit
  UNION ALL
  UNWIND range(0, size($scopes) - 1) AS i
  MATCH (sc:Scope {key: $scopes[i]})-[m:MEASURED]->(k)
  WHERE NOT coalesce(sc.deleting, false) AND NOT coalesce(sc.incomplete, false) AND m.level = $level AND m.attempts > 0
  WITH coalesce(k.id, k.name) AS key,
       collect({i: i, n: m.attempts, failures: m.failures}) AS seen, max(m.attempts) AS most,
       min(CASE WHEN m.attempts >= $min_support THEN 1.0 - toFloat(m.failures) / m.attempts END) AS weakest
  WHERE most >= $min_support
  WITH key, seen, weakest, most
  ORDER BY weakest, most DESC, key
  LIMIT $limit
  WITH collect({key: key, seen: seen}) AS picked
  UNWIND range(0, size(picked) - 1) AS rank
  UNWIND range(0, size($scopes) - 1) AS i
  WITH picked[rank] AS row, rank, i
  RETURN 'capability' AS kind, null AS from, row.key AS to, rank, i,
         [s IN row.seen WHERE s.i = i] AS hit
}
WITH kind, from, to, rank, i, 1.959964 AS z,
     CASE WHEN size(hit) > 0 THEN hit[0].n ELSE 0 END AS n,
     CASE WHEN size(hit) > 0 THEN hit[0].failures ELSE 0 END AS failures
WITH kind, from, to, rank, i, z, n, failures,
     CASE WHEN n > 0 THEN 1.0 - toFloat(failures) / n END AS p
RETURN kind, from, to, $scopes[i] AS scope, n, failures, p AS success,
       CASE WHEN n > 0 THEN (p + z * z / (2 * n) - z * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n))) / (1 + z * z / n)
            ELSE 0.0 END AS ci_low,
       CASE WHEN n > 0 THEN (p + z * z / (2 * n) + z * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n))) / (1 + z * z / n)
            ELSE 1.0 END AS ci_high
ORDER BY kind DESC, rank, i
