"""Optional paraphrasing of synthesized user turns through an OpenAI-compatible endpoint.

Off by default.  When enabled (``ace synth --rewriter-url URL``), each user
message of a synthesized task is sent to ``POST {URL}/chat/completions`` (any
OpenAI-compatible server: vLLM, llama.cpp, a hosted API) with a request to
paraphrase it.  A paraphrase is accepted only if every value the ground truth
takes from the user's words in that message still appears in it; otherwise the
original message is kept and the rejection is counted.  The model's reply is
treated as data: it only ever replaces message text.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_graph.tagger import tag_task
from synth.checks.values import value_in_text
from synth.errors import RewriterError

PROMPT = (
    "Rewrite the user's request below in different words, keeping its meaning. Keep every name, "
    "number, file name, identifier and quoted value exactly as written. Reply with the rewritten "
    "request only."
)


@dataclass
class Rewriter:
    base_url: str
    model: str = "default"
    api_key: str | None = None
    timeout: float = 30.0
    accepted: int = 0
    rejected: int = 0
    failures: list[str] = field(default_factory=list)

    def paraphrase(self, text: str) -> str:
        body = json.dumps({
            "model": self.model,
            "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": text}],
            "temperature": 0.7,
        }).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = self.base_url.rstrip("/") + "/chat/completions"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read().decode("utf-8"))
            content = payload["choices"][0]["message"]["content"]
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError, RecursionError, KeyError,
                IndexError, TypeError) as e:
            raise RewriterError(
                f"The rewriter at {url} failed ({type(e).__name__}: {e}). Check --rewriter-url, or drop it "
                "to synthesize without paraphrasing."
            ) from e
        if not isinstance(content, str) or not content.strip():
            raise RewriterError(f"The rewriter at {url} returned no text.")
        return content.strip()


def _user_values_by_message(task: Task) -> dict[tuple[int, int], list[Any]]:
    """For each (turn, message index), the ground-truth argument values its text supplies."""

    oracle = oracle_for(task)
    values: list[Any] = []
    for tag in tag_task(task):
        if tag.tool is None:
            continue
        step = oracle.turns[tag.turn].steps[tag.index]
        for param, source in tag.arg_sources.items():
            if source == "user" and param in step.arguments:
                v = step.arguments[param]
                values.extend(v if isinstance(v, list) else [v])
    out: dict[tuple[int, int], list[Any]] = {}
    for t, turn in enumerate(task.turns):
        for m, msg in enumerate(turn.user):
            if msg.get("role") == "user":
                text = msg.get("content", "") or ""
                out[(t, m)] = [v for v in values if isinstance(v, (str, int, float)) and not isinstance(v, bool)
                               and value_in_text(v, text)]
    return out


def rewrite_task(task: Task, rewriter: Rewriter) -> Task:
    """The task with its user messages paraphrased where the paraphrase keeps every value."""

    needed = _user_values_by_message(task)
    d = task.to_dict()
    changed = False
    for (t, m), values in needed.items():
        original = d["turns"][t]["user"][m]["content"]
        candidate = rewriter.paraphrase(original)
        if all(value_in_text(v, candidate) for v in values):
            d["turns"][t]["user"][m]["content"] = candidate
            rewriter.accepted += 1
            changed = True
        else:
            rewriter.rejected += 1
    if not changed:
        return task
    d["id"] = f"{task.id}-rw"
    d["provenance"] = {**d["provenance"], "rewritten": True}
    return Task.from_dict(d)
