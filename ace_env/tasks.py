"""ACE's task model: what an agent is asked, what it may call, and the ground truth.

A task is a list of user turns.  Each turn carries the user's messages, the
ground-truth calls (BFCL call strings such as ``mv(source='a', destination='b')``)
and the tools that become available from that turn on.  Tasks from any source
(BFCL, ACE's synthesizer) share this model, so executor, verifier, tagger and
exporter never look at a source's raw format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ace_env.views import check_views


@dataclass
class Turn:
    """One user turn.

    ``user`` holds the chat messages of the turn (``{"role", "content"}``).
    ``ground_truth`` is the list of call strings the oracle makes in this turn;
    an empty list means the right behaviour is to make no call (the request is
    under-specified or the needed tool is missing).  ``tools_added`` names the
    functions that are offered from this turn on (BFCL miss_func).
    """

    user: list[dict[str, str]]
    ground_truth: list[str]
    tools_added: list[str] = field(default_factory=list)


@dataclass
class Task:
    """A multi-turn tool-use task with its ground truth.

    ``tools`` lists every function the task may offer (from its classes, minus
    the ones excluded); ``turns[i].tools_added`` reveal held-out ones later.
    """

    id: str
    source: str
    category: str
    turns: list[Turn]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    tools: list[str]
    long_context: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)
    #: Offered tools that look right but point the wrong way; calling one fails.
    distractors: list[str] = field(default_factory=list)
    #: How tools' results are shown to the agent in this task (see :mod:`ace_env.views`).
    output_views: list[dict[str, Any]] = field(default_factory=list)
    _offered: dict[int, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)

    def offered_tools(self, turn_index: int) -> frozenset[str]:
        """The function names the agent may call in turn ``turn_index`` (cached)."""
        cached = self._offered.get(turn_index)
        if cached is None:
            cached = self._offered[turn_index] = self._compute_offered(turn_index)
        return cached

    def _compute_offered(self, turn_index: int) -> frozenset[str]:
        withheld: set[str] = set()
        for later in self.turns[turn_index + 1 :]:
            withheld.update(later.tools_added)
        for earlier in self.turns[: turn_index + 1]:
            withheld.difference_update(earlier.tools_added)
        return frozenset(t for t in self.tools if t not in withheld)

    @property
    def n_steps(self) -> int:
        """Number of ground-truth calls over all turns."""
        return sum(len(t.ground_truth) for t in self.turns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "category": self.category,
            "turns": [
                {"user": t.user, "ground_truth": t.ground_truth, "tools_added": t.tools_added}
                for t in self.turns
            ],
            "initial_config": self.initial_config,
            "involved_classes": self.involved_classes,
            "tools": self.tools,
            "long_context": self.long_context,
            "provenance": self.provenance,
            "distractors": self.distractors,
            **({"output_views": self.output_views} if self.output_views else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Task":
        return cls(
            id=d["id"],
            source=d["source"],
            category=d["category"],
            turns=[
                Turn(t["user"], list(t["ground_truth"]), list(t.get("tools_added", [])))
                for t in d["turns"]
            ],
            initial_config=d["initial_config"],
            involved_classes=list(d["involved_classes"]),
            tools=list(d["tools"]),
            long_context=bool(d.get("long_context", False)),
            provenance=dict(d.get("provenance", {})),
            distractors=list(d.get("distractors", [])),
            output_views=check_views(d.get("output_views")),
        )
