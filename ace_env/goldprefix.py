"""What gold-prefix scoring asks of an environment: its entry's ``gold_prefix`` (:class:`GoldPrefix`).

Gold-prefix scoring (:mod:`train.goldprefix`) asks a policy for one oracle step at a time, with the oracle's
own prefix in context.  What that prefix is and how an answer at a step is judged belong to the environment;
the model side (teacher forcing, generation, the stored records) is the training layer's.  So an environment
gives, in its entry:

* ``transcript(task)``: the task's gold transcript (:class:`GoldTranscript`): the chat messages of the oracle
  played as a conversation (system message included, one oracle call per assistant message, each with its
  real output), the steps a policy is asked (:class:`GoldStep`: where each gold answer sits), and the tools
  offered; :class:`GoldPrefixError` when the gold does not run cleanly;
* ``judge(tasks, budget)``: a context manager (the environment's checker started over ``tasks``) yielding a
  function ``(steps, replies) -> [StepVerdict]`` that judges each reply (an object with ``message``, the
  assistant message, and ``finish_reason``, ``"error"`` when the policy gave no answer) at its step;
* ``prefix``: what a step's prefix is (a run's summary names it: ``task-turns``, ``ideal-dialogue``).

:data:`SYSTEM_PROMPT`, :data:`DONE_MESSAGE` and :data:`ABSTAIN_MESSAGE` are the agent's texts an environment
without a prompt of its own uses (BFCL's rollouts, exports and transcripts use them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ace_env.errors import AceError

if TYPE_CHECKING:  # a type only: ace_env.twins imports this module, and the worker imports the executor
    from ace_env.worker import Budget

#: The system message of an agent that calls tools (BFCL's rollouts, exports, SFT and gold transcripts).
SYSTEM_PROMPT = (
    "You are an assistant that completes the user's requests by calling the tools provided. "
    "Call tools only when they are needed and only with arguments you know from the user or "
    "from earlier tool results. If a request lacks information or no tool can do it, say so "
    "instead of guessing."
)
#: The closing message a gold transcript puts after a turn's calls, as context only.
DONE_MESSAGE = "Done."
#: The closing message of a turn whose right behaviour is to make no call (a training target).
ABSTAIN_MESSAGE = (
    "I can't do that with the information and tools I have. Could you give me the missing "
    "details, or a tool that can do it?"
)


class GoldPrefixError(AceError):
    """A task whose gold cannot be written as a transcript (it does not run cleanly, is malformed, or calls
    what fits no function)."""


@dataclass(frozen=True)
class GoldStep:
    """One oracle step of a task and where its gold answer sits in the task's transcript."""

    flat: int  # index among the task's oracle steps (the tagger's flat order)
    turn: int
    index: int  # index in the turn's ground truth (0 for an abstain step)
    tool: str | None  # None: a turn whose ground truth is empty (the step is to abstain)
    call: str | None  # the ground-truth call string
    message: int  # index of the gold assistant message in the transcript's messages
    prev: int | None  # flat index of the oracle's previous call step (abstain steps skipped)


@dataclass
class GoldTranscript:
    """A task's oracle played as a conversation, and its steps."""

    task: Any
    messages: list[dict[str, Any]]
    steps: list[GoldStep]
    tools: list[dict[str, Any]] | None = None  # the tools of every turn; None: ``turn_tools(turn)``'s
    turn_tools: Callable[[int], list[dict[str, Any]]] | None = None  # the tools offered in one turn

    def tools_for(self, turn: int) -> list[dict[str, Any]]:
        if self.tools is not None:
            return self.tools
        if self.turn_tools is None:
            raise GoldPrefixError(f"task {getattr(self.task, 'id', '?')}: its transcript names no tools")
        return self.turn_tools(turn)


@dataclass
class StepVerdict:
    """The verdict on one answer at one step (what :class:`train.goldprefix.StepScore` records of it)."""

    passed: bool = False  # the step's own call verified by execution
    exact: bool = False  # the answer made exactly the gold call
    tool_right: bool = False
    attribution: str | None = None  # what went wrong, when it failed
    answer: str = ""  # the answer's text (cut)


#: (steps, replies) -> one verdict per reply (see the module doc).
Judge = Callable[[list[tuple[GoldTranscript, GoldStep]], list[Any]], list[StepVerdict]]


@dataclass(frozen=True)
class GoldPrefix:
    """What gold-prefix scoring needs of one environment's tasks (the module doc)."""

    prefix: str
    transcript: Callable[[Any], GoldTranscript]
    judge: Callable[[Mapping[str, Any], Budget], AbstractContextManager[Judge]]


def sft_row(transcript: GoldTranscript) -> dict[str, Any]:
    """A gold transcript as an OpenAI chat fine-tuning example (``{"messages", "tools"}``): what an environment
    without rows of its own writes for ``ace export --format openai-sft`` (its entry's ``export_rows``)."""
    return {"messages": [dict(m) for m in transcript.messages], "tools": transcript.tools_for(0)}
