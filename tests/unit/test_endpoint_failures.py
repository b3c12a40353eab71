"""An ``openai:`` endpoint that is down or answers garbage stops the command in one line (issue 35, defects 3
and 6); request timeout and retries are bounded flags; no credential is ever shown (defect 12).

The failing endpoints are a closed port and tests/faultserver.py (a server answering one canned fault;
it implements none of the OpenAI API).  No Neo4j here: ``ace eval``'s "stores nothing" is
tests/integration/test_endpoint_outage.py.
"""

from __future__ import annotations

import json
import time

import pytest
from faultserver import failing_endpoint

from ace.cli import main
from ace_env.errors import ConfigError
from ace_env.redact import redact, redact_url, url_password
from train.errors import EndpointError
from train.policies import GenerationConfig, load_policy, policy_name
from train.policies.base import Conversation
from train.policies.openai import RequestConfig, parse_endpoints

CLOSED = "http://127.0.0.1:1/v1"


def _rollout(tmp_path, url: str, *flags: str) -> tuple[int, list[str]]:
    """``ace rollout`` of one BFCL task through ``openai:m@url``: (exit code, files left in tmp_path)."""
    out = tmp_path / "r.jsonl"
    rc = main(["rollout", "-p", f"openai:m@{url}", "--tasks", "bfcl:base", "--limit", "1", "--out", str(out),
               *flags])
    return rc, sorted(p.name for p in tmp_path.iterdir())


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and err.count("error:") == 1, err
    return lines[0]


def _convs(n: int = 2) -> list[Conversation]:
    return [Conversation([{"role": "user", "content": "x"}], [], key=f"t#{i}") for i in range(n)]


# --------------------------------------------------------------------------- the command stops (defect 3)


def test_closed_port_stops_the_rollout_after_the_retries_and_writes_nothing(tmp_path, capsys):
    rc, left = _rollout(tmp_path, CLOSED, "--request-retries", "1")
    err = capsys.readouterr().err
    line = _one_error_line(err)
    assert rc == 1 and left == []  # no --out, no temporary file
    assert "did not answer after 2 attempt(s)" in line and "Connection refused" in line, line


def test_endpoint_answering_500_stops_the_rollout_and_is_asked_retries_plus_one_times(tmp_path, capsys):
    with failing_endpoint(500, b"the GPU fell off") as (url, got):
        rc, left = _rollout(tmp_path, url, "--request-retries", "2")
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and left == []
    assert "HTTP 500" in line and "the GPU fell off" in line and "3 attempt(s)" in line, line
    assert got == ["/v1/chat/completions"] * 3  # --request-retries 2: three requests, then the stop


def test_endpoint_answering_200_with_a_body_that_is_not_json_is_one_line_and_not_retried(tmp_path, capsys):
    # Defect 6: a traceback (json.JSONDecodeError out of the thread pool).
    with failing_endpoint(200, b"<html>captive portal</html>") as (url, got):
        rc, left = _rollout(tmp_path, url)
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and left == []
    assert "not JSON" in line and "captive portal" in line, line
    assert len(got) == 1  # the answer is wrong, not late: retrying would not change it


def test_endpoint_answering_json_that_is_not_a_chat_completion_stops_the_run():
    with failing_endpoint(200, b'{"object": "list", "data": []}') as (url, _):
        policy = load_policy(f"openai:m@{url}")
        with pytest.raises(EndpointError, match="not a chat completion"):
            policy.generate(_convs(), GenerationConfig())
        with pytest.raises(EndpointError):  # the policy stays down: a later batch is not sent
            policy.generate(_convs(1), GenerationConfig())
        policy.close()


def test_an_endpoint_that_never_answers_is_given_up_after_the_request_timeout(tmp_path, capsys):
    # Defect 6: each request waited 120 s, times 4 attempts, with no flag to shorten it.
    with failing_endpoint(hang=True) as (url, got):
        start = time.monotonic()
        rc, left = _rollout(tmp_path, url, "--request-timeout", "0.5", "--request-retries", "1")
        took = time.monotonic() - start
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and left == [] and len(got) == 2
    assert "timed out" in line and "2 attempt(s)" in line, line
    assert took < 20, took  # 2 x 0.5 s and a 1 s backoff, not 2 x 120 s


def test_a_request_the_endpoint_refuses_is_that_conversations_error_not_a_stop():
    """HTTP 400 (e.g. longer than the model's context) refuses one conversation: its reply is an error the
    rollout records, the batch goes on, and the endpoint is not retried."""
    with failing_endpoint(400, b"maximum context length is 8 tokens") as (url, got):
        policy = load_policy(f"openai:m@{url}")
        replies = policy.generate(_convs(3), GenerationConfig())
        policy.close()
    assert [r.finish_reason for r in replies] == ["error"] * 3 and len(got) == 3
    assert "HTTP 400" in replies[0].error and "maximum context length" in replies[0].error


@pytest.mark.parametrize("status", [401, 404])
def test_a_wrong_key_model_or_path_stops_the_run_without_showing_the_key(status, monkeypatch):
    key = "sk-test-h2-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with failing_endpoint(status, b"bad credentials:", echo_auth=True) as (url, got):
        policy = load_policy(f"openai:m@{url}")
        with pytest.raises(EndpointError) as e:
            policy.generate(_convs(), GenerationConfig())
        policy.close()
    assert f"HTTP {status}" in str(e.value) and "bad credentials" in str(e.value) and len(got) >= 1
    assert key not in str(e.value) and "Bearer ***" in str(e.value)  # the server repeated it; ACE does not


def test_every_rollout_refused_by_the_endpoint_exits_non_zero(tmp_path, capsys):
    # The file holds the refusals (for inspection); the command says every rollout ended by a policy error.
    with failing_endpoint(400, b"no such tool format") as (url, _):
        rc = main(["rollout", "-p", f"openai:m@{url}", "--tasks", "bfcl:base", "--limit", "1",
                   "--out", str(tmp_path / "r.jsonl")])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and "every one of the 1 rollouts ended by a policy error" in line and "HTTP 400" in line
    row = json.loads((tmp_path / "r.jsonl").read_text())
    assert "HTTP 400" in row["meta"]["errors"][0]


# --------------------------------------------------------------------------- specs and flags (defect 6)


@pytest.mark.parametrize("url", [
    "http://[::1", "http://[::1/v1", "http://127.0.0.1:http/v1", "http://127.0.0.1:99999/v1", "http:///v1",
    "http://host/v1?x=1", "http://host /v1", "http://hôst/v1", "ftp://host/v1", "http://ho\tst/v1",
])
def test_a_malformed_base_url_is_one_line_before_any_work(url, tmp_path, capsys):
    rc, left = _rollout(tmp_path, url)
    line = _one_error_line(capsys.readouterr().err)
    assert rc in (1, 2) and left == [] and "base URL" in line, line


@pytest.mark.parametrize("flags, says", [
    (["--request-timeout", "0"], "--request-timeout must be at least 0.1"),
    (["--request-timeout", "3601"], "--request-timeout must be at most 3600"),
    (["--request-timeout", "nan"], "--request-timeout must be a finite number"),
    (["--request-timeout", "inf"], "--request-timeout must be a finite number"),
    (["--request-retries", "-1"], "--request-retries must be at least 0"),
    (["--request-retries", "11"], "--request-retries must be at most 10"),
])
def test_request_flags_are_bounded(flags, says, tmp_path, capsys):
    rc, left = _rollout(tmp_path, CLOSED, *flags)
    line = _one_error_line(capsys.readouterr().err)
    assert rc in (1, 2) and left == [] and says in line, line


def test_request_settings_come_from_flags_then_the_environment_then_the_defaults(monkeypatch):
    assert RequestConfig.from_env() == RequestConfig(120.0, 3)
    monkeypatch.setenv("ACE_REQUEST_TIMEOUT", "7.5")
    monkeypatch.setenv("ACE_REQUEST_RETRIES", "0")
    assert RequestConfig.from_env() == RequestConfig(7.5, 0)
    assert RequestConfig.from_env(timeout_s=2.0) == RequestConfig(2.0, 0)
    [endpoint] = load_policy("openai:m@http://127.0.0.1:1/v1").endpoints
    assert (endpoint.timeout_s, endpoint.retries) == (7.5, 0)
    [endpoint] = parse_endpoints("openai:m@http://127.0.0.1:1/v1", RequestConfig(3.0, 5))
    assert (endpoint.timeout_s, endpoint.retries) == (3.0, 5)
    monkeypatch.setenv("ACE_REQUEST_RETRIES", "many")
    with pytest.raises(ConfigError, match="ACE_REQUEST_RETRIES='many' is not a whole number"):
        load_policy("openai:m@http://127.0.0.1:1/v1")


# --------------------------------------------------------------------------- credentials (defect 12)


def test_a_password_in_a_base_url_is_refused_and_never_shown(tmp_path, capsys):
    rc, left = _rollout(tmp_path, "http://bob:Hunter2-h2@127.0.0.1:1/v1")
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert rc == 1 and left == [] and "carries credentials" in line, line
    assert "Hunter2-h2" not in captured.err + captured.out
    assert policy_name("openai:m@http://bob:Hunter2-h2@h/v1") == "openai-m"  # a scope name never carries it


def test_model_names_with_an_at_sign_still_parse():
    [e] = parse_endpoints("openai:org/model@v2@http://127.0.0.1:8000/v1")
    assert (e.model, e.base_url) == ("org/model@v2", "http://127.0.0.1:8000/v1")
    assert policy_name("openai:org/model@v2@http://127.0.0.1:8000/v1") == "openai-org_model_v2"


def test_redact_masks_url_passwords_and_the_environments_secrets(monkeypatch):
    monkeypatch.setenv("NEO4J_URI", "neo4j://neo4j:p%40ss-h2-word@db:7687")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-h2-secret-key")
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    assert url_password("neo4j://neo4j:p%40ss-h2-word@db:7687") == "p@ss-h2-word"
    assert redact_url("bolt://u:p@ss@h:1/x and http://a:b@c") == "bolt://u:***@h:1/x and http://a:***@c"
    assert redact_url("http://user@host/v1") == "http://user@host/v1"  # a user name alone is not a secret
    # a credential in a query (h9's hostile run: the refusal of such a base URL repeated it)
    assert redact_url("http://h/v1?key=s3cret&x=1") == "http://h/v1?key=***&x=1"
    assert redact_url("'http://h/v1?a=1&api_key=s3cret&access_token=t0k'") == "'http://h/v1?a=1&api_key=***&access_token=***'"
    assert redact_url("http://h/v1?q=key") == "http://h/v1?q=key"
    text = "auth p@ss-h2-word failed for key sk-h2-secret-key at neo4j://neo4j:p%40ss-h2-word@db:7687"
    assert redact(text) == "auth *** failed for key *** at neo4j://neo4j:***@db:7687"
    assert redact("a short secret", ["a"]) == "a short secret"  # too short to mask as text


def test_a_key_in_a_base_urls_query_is_refused_and_never_shown(tmp_path, capsys):
    rc = main(["rollout", "-p", "openai:m@http://127.0.0.1:1/v1?api_key=Hunter4-h9", "--tasks", "bfcl:base", "--limit",
               "1", "--out", str(tmp_path / "r.jsonl")])
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert rc == 1 and "query or fragment" in line, line
    assert "Hunter4-h9" not in captured.err + captured.out and list(tmp_path.iterdir()) == []


def test_a_password_in_the_rewriter_url_is_refused_and_never_shown(tmp_path, capsys):
    rc = main(["synth", "-e", "x", "--out", str(tmp_path / "t.jsonl"), "--rewriter-url",
               "http://bob:Hunter3-h2@127.0.0.1:1/v1"])
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert rc == 1 and "--rewriter-url" in line and "carries credentials" in line, line
    assert "Hunter3-h2" not in captured.err + captured.out and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("uri", ["http://neo4j:Hunter5-h9@127.0.0.1:7474", "https://127.0.0.1:7473", "127.0.0.1:7687",
                                 "ftp://127.0.0.1:7687"])
def test_a_neo4j_uri_that_is_not_bolt_is_one_line(uri, monkeypatch, capsys):
    """NEO4J_URI=http://... reached the driver's HTTP support, which needs aiohttp: a ModuleNotFoundError traceback
    from every command (h9's hostile run)."""
    monkeypatch.setenv("NEO4J_URI", uri)
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    monkeypatch.delenv("NEO4J_USER", raising=False)
    assert main(["scopes"]) == 1
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert "is not a Bolt address" in line and "Hunter5-h9" not in captured.err + captured.out, line
