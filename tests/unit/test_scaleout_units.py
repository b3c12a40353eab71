"""The pure parts of `--ray`: several openai endpoints, the canonical rollout order, loopback detection."""

from __future__ import annotations

import random
import socket

import pytest
from faultserver import failing_endpoint

from ace_env import bfcl
from ace_env.scaleout import SINGLE_MACHINE_ENV, LocalRunner, is_loopback, runner_for, single_machine
from train.distributed import expected_ids
from train.engine import in_order
from train.policies import GenerationConfig, PolicyError, endpoint_count, load_policy
from train.policies.base import Conversation
from train.policies.openai import parse_endpoints


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_spec_takes_several_base_urls():
    spec = "openai:m@http://10.0.0.1:8000/v1,http://10.0.0.2:8000/v1/"
    eps = parse_endpoints(spec)
    assert [e.base_url for e in eps] == ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]
    assert {e.model for e in eps} == {"m"} and endpoint_count(spec) == 2 and endpoint_count("sim:") == 1
    one = load_policy(spec, endpoint=1)
    assert one.spec == spec and [e.base_url for e in one.endpoints] == ["http://10.0.0.2:8000/v1"]
    for bad in ("openai:m@http://a/v1,,http://b/v1", "openai:m@http://a/v1,http://a/v1", "openai:m@http://a,ftp://b"):
        with pytest.raises(PolicyError):
            parse_endpoints(bad)


def test_conversations_are_shared_by_the_endpoints_and_stay_with_theirs():
    # Two endpoints that refuse every request (HTTP 400: a refusal is the conversation's error reply, which
    # names the endpoint that gave it); fault injection only, tests/faultserver.py.
    with failing_endpoint(400, b"refused") as (url_a, got_a), failing_endpoint(400, b"refused") as (url_b, got_b):
        policy = load_policy(f"openai:m@{url_a},{url_b}")
        convs = [Conversation([{"role": "user", "content": "x"}], [], key=f"t#{i}") for i in range(12)]
        first = policy.generate(convs, GenerationConfig())
        again = policy.generate(convs, GenerationConfig())
        policy.close()
    assert all(r.finish_reason == "error" for r in first + again)
    served = [url_a if r.error.startswith(url_a) else url_b for r in first]
    assert set(served) == {url_a, url_b} and len(got_a) + len(got_b) == 24  # both endpoints got conversations
    assert [r.error for r in again] == [r.error for r in first]  # each conversation keeps its endpoint


def test_in_order_puts_finished_rows_in_the_canonical_order():
    tasks = bfcl.load_tasks("base")[:4]
    order = expected_ids(tasks, 3)
    assert order[:3] == [f"{tasks[0].id}#{g}" for g in range(3)] and len(order) == 12
    rows = [{"rollout_id": rid} for rid in order]
    shuffled = rows[:]
    random.Random(0).shuffle(shuffled)
    assert list(in_order(shuffled, order)) == rows
    with pytest.raises(PolicyError, match="did not come back"):
        list(in_order(shuffled[:-1], order))
    with pytest.raises(PolicyError, match="came twice"):
        list(in_order(shuffled + shuffled[:1], order))


def test_loopback_detection(monkeypatch):
    monkeypatch.delenv(SINGLE_MACHINE_ENV, raising=False)
    assert is_loopback("local") and is_loopback("127.0.0.1:6379") and is_loopback("localhost:1")
    assert not is_loopback("10.1.2.3:6379") and not is_loopback("auto")
    assert single_machine("local") and not single_machine("10.1.2.3:6379") and not single_machine("auto")
    # nothing listens on this loopback port: not a cluster reachable on the machine's address
    assert single_machine(f"127.0.0.1:{_closed_port()}")
    monkeypatch.setenv(SINGLE_MACHINE_ENV, "1")
    assert not single_machine("local")
    assert isinstance(runner_for(None), LocalRunner) and runner_for(None).submit(pow, 2, 5) == 32
