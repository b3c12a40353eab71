"""A task's gold transcript as a policy is asked it: the environment's transcript (its entry's ``gold_prefix``,
:mod:`ace_env.goldprefix`) and, for each step, the conversation up to the gold answer."""

from __future__ import annotations

from dataclasses import dataclass

from ace_env.goldprefix import GoldStep, GoldTranscript
from train.policies.base import Conversation

__all__ = ["GoldStep", "Transcript"]


@dataclass
class Transcript(GoldTranscript):
    """A task's oracle played as a conversation, and its steps (:class:`ace_env.goldprefix.GoldTranscript`)."""

    @classmethod
    def of(cls, gold: GoldTranscript) -> Transcript:
        return cls(gold.task, gold.messages, gold.steps, gold.tools, gold.turn_tools)

    def conversation(self, step: GoldStep) -> Conversation:
        """The conversation up to (not including) the gold answer of ``step``, as a policy is asked it."""
        return Conversation(
            [dict(m) for m in self.messages[: step.message]],
            self.tools_for(step.turn),
            key=f"{self.task.id}@{step.turn}.{step.index}",
            task=self.task,
            turn=step.turn,
            state={"gold_step": (step.turn, step.index)},
        )
