// Purpose: label the stored rollouts of a dialogue evaluation (`ace eval` of a dialogue environment: τ²)
//   with the checks ACE's verifier does not make, each by how it was reached.
//   Exact: reward_method 'exact' (the stored reward is ACE's verifier),
//   communicate_ok (τ²'s COMMUNICATE check, deterministic; null: nothing to
//   communicate), tau2_reward (τ²'s reward without its NL assertions: ACE's
//   final-state checks times communicate_ok where the task's reward basis
//   names COMMUNICATE; the stored reward is stricter). Judged, only with
//   --judge, under their own names: judged_nl ('pass', 'fail' or 'unparseable'), judged_by (the judge's
//   policy spec), judged_verdicts (JSON: each assertion's yes/no/unparseable/
//   error and the judge's raw answer). A rollout without them has null there.
// Parameters: $rows (list of {id, communicate_ok, communicate_missing,
//   tau2_reward, judged_nl, judged_by, judged_verdicts})
// Columns: rollouts
// Mode: write
UNWIND $rows AS row
MATCH (r:Rollout {id: row.id})
SET r.reward_method = 'exact',
    r.communicate_ok = row.communicate_ok,
    r.communicate_missing = row.communicate_missing,
    r.communicate_method = CASE WHEN row.communicate_ok IS NULL THEN null ELSE 'exact' END,
    r.tau2_reward = row.tau2_reward,
    r.judged_nl = row.judged_nl,
    r.judged_by = row.judged_by,
    r.judged_verdicts = row.judged_verdicts
RETURN count(r) AS rollouts
