"""GRPO with ACE's verifier as the reward, multi-turn, with dynamic filtering.

One module per part, as TRL pairs a config with a trainer: :mod:`train.grpo.config` (the run's settings),
:mod:`train.grpo.rollout` (ACE's ``rollout_func``), :mod:`train.grpo.metrics` (the per-step metrics file),
:mod:`train.grpo.trainer` (TRL's trainer, bounded, and :func:`train_grpo`).  The reward is
:func:`train.rewards.reward_of`, the one definition export and evaluation use too.

TRL's :class:`trl.GRPOTrainer` does the optimisation; ACE owns the rollout.

Why ``rollout_func`` and not ``environment_factory``: an ACE episode is a
whole multi-turn conversation — scripted (or simulated) user turns between
assistant turns, tools offered per turn, tool results fed back, a step cap per
turn — and its reward is the verifier's verdict over all of it.  TRL's
environment mode runs a tool loop inside one assistant turn and cannot put a
user turn between two assistant turns; nor could it resample prompts, which
dynamic filtering needs.  With ``rollout_func`` ACE runs its own rollout engine
(:mod:`train.engine`, the same engine ``ace rollout`` and ``ace eval`` use),
verifies every episode, drops zero-variance groups and refills the batch from
further prompts (:mod:`train.filtering`), and hands TRL token ids with a mask.

Token layout: each episode is re-rendered with the policy's chat template
(``return_assistant_tokens_mask``); the prompt is everything before the first
assistant token, the completion everything after, and ``env_mask`` is 1 on the
assistant's tokens and 0 on the user's and the tools' tokens, so only what the
policy wrote carries loss.  Re-rendering can tokenise the policy's text
slightly differently from how it was sampled; TRL recomputes log-probabilities
from the ids it is given, so the update is exact for those ids.  Tools offered
only from a later turn (BFCL miss_func) are listed with the first turn's tools
in the rendered prompt — a small mismatch with what the policy saw.

The dataset's ``prompt`` column holds task ids: the engine builds each
conversation from its task.  Rewards reach TRL through the ``ace_reward``
field of the rollout output and :func:`ace_reward` (a TRL-native reward
function).
"""

from train.grpo.config import VLLM_MODES, GRPORunConfig, vllm_settings
from train.grpo.metrics import MetricsWriter
from train.grpo.rollout import ACERollout, StepRecord, check_mode, check_sequence_length, episode_tokens
from train.grpo.trainer import bounded_grpo_trainer, train_grpo, trim_padding
from train.rewards import ace_reward, reward_of

__all__ = ["ACERollout", "GRPORunConfig", "MetricsWriter", "StepRecord", "VLLM_MODES", "ace_reward", "bounded_grpo_trainer",
           "check_mode", "check_sequence_length", "episode_tokens", "reward_of", "train_grpo", "trim_padding", "vllm_settings"]
