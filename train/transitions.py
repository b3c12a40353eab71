"""GRPO on transitions: each prompt is a gold prefix ending just before one oracle step.

The composition-level oracle is also a reward.  A prompt is one oracle step of a
task, with the oracle's calls and real outputs before it in context
(:mod:`train.goldprefix`); the policy samples G answers, the first call of each
replaces the oracle's call at that step and the turn is verified by execution in
the bounded worker: reward 1 when the turn still verifies (the call reproduced
the step's effect), else 0.  Each environment's steps are built and judged by its gold-prefix hooks
(its environment's ``gold_prefix``: BFCL's task turns, τ²'s ideal dialogue), so a run on τ² tasks is the
same run.  A 135M model gets some of these right, so groups
have variance and dynamic filtering keeps them, where whole multi-turn episodes
give it 0 every time.

:class:`Transitions` is what :class:`train.grpo.ACERollout` uses in this mode
(``GRPORunConfig.transitions``): its prompts are step keys (``TASK@TURN.INDEX``)
instead of task ids; the trainer, dynamic filtering, metrics and memory bounds
are the same.  Only the sampled answer carries loss (the gold prefix is context).
"""

from __future__ import annotations

import time
from typing import Any

from ace_env.errors import ConfigError
from ace_env.tasks import Task
from ace_env.worker import Budget
from train.errors import ExportError
from train.filtering import Group
from train.goldprefix import GoldStep, Transcript, judge_steps, transcript
from train.policies.base import Conversation, GenerationConfig, Policy, PolicyError


def step_key(tr: Transcript, step: GoldStep) -> str:
    return f"{tr.task.id}@{step.turn}.{step.index}"


def parse_targets(text: str) -> set[tuple[str, str]]:
    """``"a>b,c>d"`` as {(a, b), (c, d)}; one-line error on anything else."""
    out = set()
    for item in (x.strip() for x in text.split(",") if x.strip()):
        a, sep, b = item.partition(">")
        if not sep or not a.strip() or not b.strip() or ">" in b:
            raise ConfigError(f"a target is FROM>TO (two tool names), not {item!r}; e.g. get_stock_info>place_order")
        out.add((a.strip(), b.strip()))
    return out


def transition_steps(tasks: dict[str, Task], targets: set[tuple[str, str]] | None = None
                     ) -> dict[str, tuple[Transcript, GoldStep]]:
    """Every call step of the tasks (only those whose composition previous-call → call is in ``targets``,
    when given), by step key.  Tasks whose oracle does not execute cleanly are left out."""
    out: dict[str, tuple[Transcript, GoldStep]] = {}
    for task in tasks.values():
        try:
            tr = transcript(task)
        except (ExportError, PolicyError):  # a gold that does not execute, or an ideal dialogue that cannot be built
            continue
        tools = {s.flat: s.tool for s in tr.steps}
        for s in tr.steps:
            if s.tool is None:
                continue
            prev = tools[s.prev] if s.prev is not None else None
            if targets is None or (prev, s.tool) in targets:
                out[step_key(tr, s)] = (tr, s)
    return out


class Transitions:
    """The steps a transition-mode GRPO run samples from, how a group is sampled and verified, and which
    tokens of a sampled row are the completion."""

    def __init__(self, steps: dict[str, tuple[Transcript, GoldStep]], template: str, compact_tools: bool = True):
        if not steps:
            raise ConfigError("no transition to train on: no oracle step of the tasks matches the targets")
        self.steps = steps
        self.template = template
        self.compact_tools = compact_tools

    @classmethod
    def from_tasks(cls, tasks: dict[str, Task], targets: str, template: str,
                   compact_tools: bool = True) -> "Transitions":
        return cls(transition_steps(tasks, parse_targets(targets) if targets else None), template, compact_tools)

    @property
    def tasks(self) -> dict[str, Task]:
        """The task of every step key."""
        return {k: tr.task for k, (tr, _) in self.steps.items()}

    def sample(self, policy: Policy, keys: list[str], G: int, generation: GenerationConfig, budget: Budget,
               timing: dict[str, float]) -> list[Group]:
        """G answers to each step's gold prefix, each verified by execution at its step (reward 1 or 0)."""
        pairs = [self.steps[k] for k in keys for _ in range(G)]
        convs: list[Conversation] = []
        for i, (tr, s) in enumerate(pairs):
            conv = tr.conversation(s)
            conv.key = f"{conv.key}#{i % G}"
            convs.append(conv)
        start = time.perf_counter()
        replies = policy.generate(convs, generation)
        timing["generate"] += time.perf_counter() - start
        start = time.perf_counter()
        scores = judge_steps(pairs, replies, budget)
        timing["verify"] += time.perf_counter() - start
        groups = []
        for j, key in enumerate(keys):
            rows, rewards = [], []
            for i in range(j * G, (j + 1) * G):
                rows.append({"task_id": key, "messages": [*convs[i].messages, dict(replies[i].message)],
                             "tools": convs[i].tools, "step": scores[i].to_dict()})
                rewards.append(1.0 if scores[i].passed else 0.0)
            groups.append(Group(key, rewards, rows))
        return groups

    def tokens(self, row: dict[str, Any], tokenizer: Any) -> tuple[list[int], list[int], list[int]]:
        """The prompt is the gold prefix; the completion is the sampled answer, the only tokens with loss."""
        enc = tokenizer.apply_chat_template(
            row["messages"], tools=row["tools"] or None, chat_template=self.template, tokenize=True,
            return_dict=True, return_assistant_tokens_mask=True, compact_tools=self.compact_tools,
        )
        ids, mask = list(enc["input_ids"]), list(enc["assistant_masks"])
        if 1 not in mask:
            raise ConfigError("the chat template marks no assistant tokens: it needs {% generation %} blocks.")
        # the last assistant span is the sampled answer; everything before it is the prompt
        end = len(mask) - mask[::-1].index(1)
        start = end
        while start > 0 and mask[start - 1]:
            start -= 1
        return ids[:start], ids[start:], mask[start:]
