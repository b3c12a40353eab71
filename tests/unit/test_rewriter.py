"""The optional rewriter: paraphrases that drop a user-supplied value are rejected."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ace_env import bfcl
from ace_env.verifier import ground_truth_rollout, verify
from synth.errors import RewriterError
from synth.rewriter import Rewriter, rewrite_task


class _Paraphraser(BaseHTTPRequestHandler):
    """A stand-in OpenAI-compatible server on loopback: `mode` picks the paraphrase."""

    mode = "keep"
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        text = body["messages"][-1]["content"]
        if type(self).mode == "keep":
            reply = "Here is what I need: " + text
        else:  # drop every quoted value
            import re

            reply = re.sub(r"'[^']*'", "that one", text)
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = HTTPServer(("127.0.0.1", 0), _Paraphraser)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _task():
    return next(t for t in bfcl.load_tasks("base") if "'" in t.turns[0].user[0]["content"])


def test_value_preserving_paraphrase_is_accepted(endpoint):
    _Paraphraser.mode = "keep"
    rw = Rewriter(endpoint, model="m")
    task = _task()
    new = rewrite_task(task, rw)
    assert new.id != task.id and new.provenance["rewritten"]
    assert new.turns[0].user[0]["content"].startswith("Here is what I need: ")
    assert rw.accepted > 0 and rw.rejected == 0
    assert _Paraphraser.requests[-1]["model"] == "m"
    assert verify(new, ground_truth_rollout(new)).reward == 1.0


def test_paraphrase_that_drops_a_value_is_rejected(endpoint):
    _Paraphraser.mode = "drop"
    rw = Rewriter(endpoint)
    task = _task()
    new = rewrite_task(task, rw)
    assert rw.rejected > 0
    for old_turn, new_turn in zip(task.turns, new.turns):
        for old_msg, new_msg in zip(old_turn.user, new_turn.user):
            if "'" in old_msg["content"]:  # a message whose quoted values the GT uses keeps its text
                assert "that one" not in new_msg["content"] or old_msg["content"] == new_msg["content"]


def test_unreachable_endpoint_is_a_clear_error():
    rw = Rewriter("http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(RewriterError, match="--rewriter-url"):
        rw.paraphrase("hello")
