"""``sim:<weakness.toml>``: the simulated agent behind the policy interface.

For each conversation it plans a whole rollout once, with
:func:`ace_env.sim.simulate_one` (the task's ground truth with the planted
slips of the weakness file), then plays it back one call per step: each answer
is one call as a BFCL python list (``[cd(folder='x')]``), and a turn's last
answer is plain text.  The slips it planted are kept in the conversation's
``state["slips"]``.
"""

from __future__ import annotations

import random
import zlib

from ace_env.sim import WeaknessSpec, load_weakness, simulate_one
from train.policies.base import Conversation, GenerationConfig, PolicyError, Reply

DONE_TEXT = "Done."


class SimPolicy:
    """The simulated agent with planted weaknesses."""

    def __init__(self, spec: str, weakness: WeaknessSpec):
        self.spec = spec
        self.weakness = weakness

    @classmethod
    def from_spec(cls, spec: str) -> "SimPolicy":
        path = spec.partition(":")[2]
        return cls(spec, load_weakness(path or None))

    def _plan(self, conv: Conversation, seed: int) -> list[list[str]]:
        if "plan" not in conv.state:
            if conv.task is None:
                raise PolicyError("the simulated agent needs the conversation's task")
            rng = random.Random(seed * 1_000_003 + zlib.crc32(conv.key.encode()))
            conv.state["plan"], conv.state["slips"] = simulate_one(conv.task, self.weakness, rng)
        return conv.state["plan"]

    def generate(self, conversations: list[Conversation], config: GenerationConfig) -> list[Reply]:
        replies = []
        for conv in conversations:
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

    def close(self) -> None:
        pass
