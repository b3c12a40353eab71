"""``sim:<weakness.toml>``: the simulated agent behind the policy interface.

For each conversation it plans a whole rollout once, with its task's
environment's ``simulate_turns`` (BFCL's :func:`ace_env.sim.simulate_one`: the
task's ground truth with the planted slips of the weakness file), then plays it
back one call per step: each answer is one call as a python list
(``[cd(folder='x')]``), and a turn's last answer is plain text.  The slips it
planted are kept in the conversation's ``state["slips"]``.

In gold-prefix scoring (:mod:`train.goldprefix`) a conversation's ``state["gold_step"]``
is ``(turn, index)``: everything before that step is the oracle's, and the agent
answers that one step alone (:func:`ace_env.sim.gold_prefix_step`), slipping
with its weakness file's probability for that step.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Sequence
from typing import Any

from ace_env.environments import environment_of
from ace_env.sim import WeaknessSpec, load_weakness
from train.policies.base import Conversation, GenerationConfig, PolicyError, Reply

DONE_TEXT = "Done."


class SimPolicy:
    """The simulated agent with planted weaknesses."""

    def __init__(self, spec: str, weakness: WeaknessSpec):
        self.spec = spec
        self.weakness = weakness

    @classmethod
    def from_spec(cls, spec: str, tasks: Sequence[Any] | None = None) -> "SimPolicy":
        """The policy of ``sim:PATH``; its weakness file checked against the tools of ``tasks``' environment
        (BFCL's functions when not given)."""
        path = spec.partition(":")[2] or None
        if not tasks:
            return cls(spec, load_weakness(path))
        return cls(spec, environment_of(tasks).load_weakness(path, list(tasks)))

    def _plan(self, conv: Conversation, seed: int) -> list[list[str]]:
        if "plan" not in conv.state:
            if conv.task is None:
                raise PolicyError("the simulated agent needs the conversation's task")
            rng = random.Random(seed * 1_000_003 + zlib.crc32(conv.key.encode()))
            play = environment_of((conv.task,)).simulate_turns  # BFCL's: ace_env.sim.simulate_one
            conv.state["plan"], conv.state["slips"] = play(conv.task, self.weakness, rng)
        return conv.state["plan"]

    def generate(self, conversations: list[Conversation], config: GenerationConfig) -> list[Reply]:
        replies = []
        for conv in conversations:
            if "gold_step" in conv.state:
                replies.append(self._gold_step(conv, config.seed))
                continue
            plan = self._plan(conv, config.seed)
            calls = plan[conv.turn] if conv.turn < len(plan) else []
            # answers since the last user message = calls already made in this turn
            made = 0
            for m in reversed(conv.messages):
                if m.get("role") == "user":
                    break
                made += m.get("role") == "assistant"
            text = f"[{calls[made]}]" if made < len(calls) else DONE_TEXT
            replies.append(Reply({"role": "assistant", "content": text}))
        return replies

    def _gold_step(self, conv: Conversation, seed: int) -> Reply:
        if conv.task is None:
            raise PolicyError("the simulated agent needs the conversation's task")
        t, i = conv.state["gold_step"]
        rng = random.Random(seed * 1_000_003 + zlib.crc32(conv.key.encode()))
        env = environment_of((conv.task,))
        if env.gold_prefix_step is None:
            raise PolicyError(f"the simulated agent plays no gold-prefix steps of {env.title} tasks")
        made, slip = env.gold_prefix_step(conv.task, t, i, self.weakness, rng)
        conv.state["slips"] = [slip] if slip else []
        if made is None:
            return Reply({"role": "assistant", "content": DONE_TEXT})
        if isinstance(made, str):  # a call in BFCL's python-list form: answer in text
            return Reply({"role": "assistant", "content": f"[{made}]"})
        args = made["arguments"]  # a call object: answer with a tool call
        return Reply({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"sim_{t}_{i}", "type": "function",
            "function": {"name": made["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}}]})

    def close(self) -> None:
        pass
