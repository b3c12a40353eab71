"""ACE's task model: what an agent is asked, what it may call, and the ground truth.

A task is a list of user turns.  Each turn carries the user's messages, the
ground-truth calls (BFCL call strings such as ``mv(source='a', destination='b')``)
and the tools that become available from that turn on.  Tasks from any source
(BFCL, ACE's synthesizer) share this model, so executor, verifier, tagger and
exporter never look at a source's raw format.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ace_env.errors import TaskLoadError
from ace_env.views import check_views

#: The user's message in a turn whose only news is new tools (``tools_added``, no words of the user's): BFCL's
#: harness sends this sentence in its miss_func turns (:mod:`ace_env.bfcl` writes it into those turns), and a
#: rollout's scripted user says it for any such turn.
ADDED_TOOLS_PROMPT = "I have updated some more functions you can choose from. What about now?"


def _need(ok: bool, name: str, what: str, value: Any) -> None:
    if not ok:
        shown = type(value).__name__ if not isinstance(value, (str, int, float, bool)) or value is None else repr(value)
        raise TaskLoadError(f"field {name!r} must be {what}, not {shown[:60]}")


def _string_list(value: Any, name: str) -> list[str]:
    _need(isinstance(value, list), name, "a list of strings", value)
    for i, item in enumerate(value):
        _need(isinstance(item, str), f"{name}[{i}]", "a string", item)
    return list(value)


def check_task_dict(d: Any) -> None:
    """Raise TaskLoadError naming the first field of ``d`` that is not what a task needs.

    Structure only (types and shapes); names of classes and functions are
    checked against BFCL by the loader (:func:`ace_env.tasksets.load_task_set`).
    """
    _need(isinstance(d, dict), "task", "a JSON object", d)
    for key in ("id", "source", "category", "turns", "initial_config", "involved_classes", "tools"):
        if key not in d:
            raise TaskLoadError(f"field {key!r} is missing")
    for key in ("id", "source", "category"):
        _need(isinstance(d[key], str) and bool(d[key]), key, "a non-empty string", d[key])
    _need(isinstance(d["turns"], list) and bool(d["turns"]), "turns", "a non-empty list of turns", d["turns"])
    for i, t in enumerate(d["turns"]):
        where = f"turns[{i}]"
        _need(isinstance(t, dict), where, "an object {user, ground_truth, tools_added}", t)
        for key in ("user", "ground_truth"):
            if key not in t:
                raise TaskLoadError(f"field '{where}.{key}' is missing")
        _need(isinstance(t["user"], list), f"{where}.user", "a list of messages", t["user"])
        for j, m in enumerate(t["user"]):
            ok = isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            _need(ok, f"{where}.user[{j}]", "a message {role, content} of strings", m)
        _string_list(t["ground_truth"], f"{where}.ground_truth")
        _string_list(t.get("tools_added", []), f"{where}.tools_added")
    _need(isinstance(d["initial_config"], dict), "initial_config", "an object {Class: {...}}", d["initial_config"])
    for cls, cfg in d["initial_config"].items():
        _need(isinstance(cfg, dict), f"initial_config.{cls}", "an object", cfg)
    _string_list(d["involved_classes"], "involved_classes")
    _string_list(d["tools"], "tools")
    _string_list(d.get("distractors", []), "distractors")
    _need(isinstance(d.get("long_context", False), bool), "long_context", "true or false", d.get("long_context"))
    _need(isinstance(d.get("provenance", {}), dict), "provenance", "an object", d.get("provenance"))


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

    @property
    def n_turns(self) -> int:
        """Number of user turns."""
        return len(self.turns)

    def fingerprint(self) -> str:
        """SHA-256 of the task's whole content (:meth:`to_dict` as canonical JSON).

        Computed afresh on every call, so a task edited in place gets a new
        fingerprint; the oracle and tag caches are keyed by it.
        """
        blob = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

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
        """A task from :meth:`to_dict` output; TaskLoadError names the first bad field."""
        check_task_dict(d)
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
