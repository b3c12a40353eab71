"""Gold-prefix scoring: every oracle step of every task, with the oracle's own prefix in context.

Modules by concern: :mod:`~train.goldprefix.transcript` (the gold transcript as a policy is asked it),
:mod:`~train.goldprefix.scores`, :mod:`~train.goldprefix.forced` (teacher forcing),
:mod:`~train.goldprefix.generated` (generated steps, judged by their environment), :mod:`~train.goldprefix.run`
(a run and the stored records).  What a step's prefix is and how an answer is judged is each environment's,
asked of its entry (``gold_prefix``, :mod:`ace_env.goldprefix`: BFCL's task turns, τ²'s ideal dialogue).

A free-running rollout of a weak model fails at its first or second call, so the
compositions deeper in a task are never reached and say nothing.  Here the unit
of observation is one oracle step: for step ``i`` of turn ``t`` the conversation
is the task's user turns with the oracle's calls and their real, executed
outputs up to that step (one call per assistant message, as the SFT transcripts
show them), and the policy is asked for the next assistant message.  Because
the prefix is always right, a failure at a step is that step's own: an upstream
mistake can never masquerade as a composition failure.

Two ways to score a step, both recorded in :class:`StepScore`:

* **teacher forced** (``hf:`` policies): one forward pass over a task's whole
  gold transcript gives, for every step at once, the gold message's mean
  negative log-likelihood per token (its tokens in the policy's own template,
  the closing ``<|im_end|>`` included), whether every gold token is the model's
  top choice (``exact``: greedy decoding would write exactly the gold call and
  stop), and whether the tool name's tokens are (``tool_right``);
* **generated** (``generate=True``; the only way for ``sim:`` and ``openai:``
  policies): the policy writes the step, its first call replaces the oracle's
  call at that step, the rest of the turn stays the oracle's, and the verifier
  checks the turn in the bounded worker.  ``passed`` is the turn's verdict, so a
  call equal in effect but not in form passes.

A step's ``outcome`` for the skill graph is ``passed`` when generated, else
``exact``.  :func:`records` turns a task's scores into one stored rollout whose
every oracle step is reached, each step's predecessor being the oracle's
previous call, so the graph's queries, the estimator and the frontier work on a
gold-prefix scope unchanged.  Tasks whose ground truth does not execute
cleanly are left out (counted in :class:`Scoring`).

Steps of turns with an empty ground truth (BFCL miss_func / miss_param) are
scored on the oracle's closing text (the abstention): generated, a step passes
when no call is made; teacher forced, ``tool_right`` says whether the model's
first token starts the text rather than a call.
"""

from __future__ import annotations

from train.goldprefix.forced import teacher_forced, teacher_forced_shared
from train.goldprefix.generated import generated, step_score
from train.goldprefix.run import gold_prefix_of, judge_steps, records, score_tasks, transcript
from train.goldprefix.scores import Scoring, StepScore, summarize
from train.goldprefix.transcript import GoldStep, Transcript

__all__ = ["GoldStep", "Scoring", "StepScore", "Transcript", "generated", "gold_prefix_of", "judge_steps", "records",
           "score_tasks", "step_score", "summarize", "teacher_forced", "teacher_forced_shared", "transcript"]
