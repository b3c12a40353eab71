"""The policy interface: a batch of conversations in, one assistant message each out.

Every policy (a local transformers model, an OpenAI-compatible endpoint, the
simulated agent) answers :meth:`Policy.generate`: given conversations as
OpenAI-style messages and the tools offered to each at this point, it returns
one assistant message per conversation.  Batched, so a GPU or the CPU is used
well; the rollout engine (:mod:`train.rollouts`) advances many conversations
with one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ace_env.tasks import Task
from train.errors import PolicyError

__all__ = ["Conversation", "GenerationConfig", "Policy", "PolicyError", "Reply"]


@dataclass
class GenerationConfig:
    """How a policy samples its answers."""

    temperature: float = field(default=0.0, metadata={"help": "0 is greedy decoding."})
    max_tokens: int = field(default=256, metadata={"help": "Longest answer, in tokens."})
    seed: int = field(default=0, metadata={"help": "Seed of the sampling (same seed, same answers)."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling threshold (with temperature > 0)."})

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise PolicyError(f"temperature must be >= 0, not {self.temperature}")
        if self.max_tokens < 1:
            raise PolicyError(f"max_tokens must be >= 1, not {self.max_tokens}")
        if not 0 < self.top_p <= 1:
            raise PolicyError(f"top_p must be in (0, 1], not {self.top_p}")


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
