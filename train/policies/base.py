"""The policy interface: a batch of conversations in, one assistant message each out.

Every policy (a local transformers model, an OpenAI-compatible endpoint, the
simulated agent) answers :meth:`Policy.generate`: given conversations as
OpenAI-style messages and the tools offered to each at this point, it returns
one assistant message per conversation.  Batched, so a GPU or the CPU is used
well; the rollout engine (:mod:`train.engine`) advances many conversations
with one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ace_env.errors import ConfigError
from ace_env.fields import SEED_MAX, check_bounds
from ace_env.tasks import Task
from train.errors import PolicyError

__all__ = ["Conversation", "GenerationConfig", "Policy", "PolicyError", "Reply"]

#: The longest answer a policy may be asked for, in tokens.
MAX_NEW_TOKENS = 32_768
#: The longest sequence (prompt plus answer, tokens) a training or serving flag may ask for.
MAX_SEQUENCE_TOKENS = 1 << 20


@dataclass
class GenerationConfig:
    """How a policy samples its answers."""

    temperature: float = field(default=0.0, metadata={"help": "Sampling temperature; 0 is greedy decoding.", "min": 0.0, "max": 2.0})
    max_tokens: int = field(default=256, metadata={"help": "Longest answer, in tokens.", "min": 1, "max": MAX_NEW_TOKENS})
    seed: int = field(default=0, metadata={"help": "Seed of the sampling (same seed, same answers).", "min": 0,
                                                "max": SEED_MAX})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling threshold (with temperature > 0)."})

    def __post_init__(self) -> None:
        check_bounds(self)
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"GenerationConfig.top_p must be in (0, 1], not {self.top_p}; give e.g. 0.95")


@dataclass
class Conversation:
    """One conversation as a policy sees it.

    ``messages`` are OpenAI-style chat messages; ``tools`` the OpenAI tool
    schemas offered now.  ``task`` and ``turn`` say where the conversation
    stands (the simulated agent needs them; a model ignores them); ``key``
    names the conversation (its rollout id) and ``state`` is scratch space a
    policy may keep per conversation.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    key: str = ""
    task: Task | None = None
    turn: int = 0
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reply:
    """One assistant message and what it cost."""

    message: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"  # stop | length | error
    error: str = ""


class Policy(Protocol):
    """Anything that answers a batch of conversations."""

    spec: str

    def generate(self, conversations: list[Conversation], config: GenerationConfig) -> list[Reply]:
        """One reply per conversation, in order."""
        ...

    def close(self) -> None:
        """Release what the policy holds (threads, models)."""
        ...
