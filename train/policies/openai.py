"""``openai:<model>@<base_url>[,<base_url>...]``: OpenAI-compatible chat endpoints (vLLM, SGLang, a hosted API).

Several base URLs (comma-separated, e.g. several vLLM servers of one model)
share the conversations: each conversation goes to one endpoint, chosen from
its key (``crc32(key) % n``), so the same conversation always meets the same
server; ``ace rollout --ray`` instead gives each endpoint its own Ray actor.

Tools go out as ``tools``; calls come back in ``tool_calls`` (or as Hermes text,
which the rollout engine's parser reads too).  Requests of a batch run
concurrently, at most ``concurrency`` at a time; each waits at most
:attr:`RequestConfig.timeout_s` (``--request-timeout``) for the endpoint, and
connection errors, timeouts, 429 and 5xx answers are retried
:attr:`RequestConfig.retries` times (``--request-retries``) with exponential
backoff (1 s, 2 s, 4 s ...).

What fails is told apart by where it failed:

* an endpoint that still does not answer after the retries, answers another
  error (401, 403, 404: a wrong key, model or URL), or answers something that is
  not a chat completion (a body that is not JSON, JSON without ``choices``)
  raises :class:`EndpointError`: the run stops, and the command stores nothing,
  because an outage scored as the model's failures is a wrong measurement;
* a request the endpoint refuses for what it holds (HTTP 400, 413, 422, e.g. a
  conversation longer than the model's context) is that conversation's reply
  with ``finish_reason="error"``: the rollout records it and ends, the batch
  goes on.

The API key, if any, is read from ``OPENAI_API_KEY`` and never shown; a base URL
carrying credentials (``http://user:password@host``) is refused.  Only the
standard library is used.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import re
import threading
import time
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit

from ace_env.errors import ConfigError
from ace_env.fields import check_bounds
from ace_env.redact import redact, redact_url
from train.errors import EndpointError, RefusedRequest, RetryableRequest
from train.policies.base import Conversation, GenerationConfig, PolicyError, Reply

log = logging.getLogger(__name__)

#: Bounds of the request flags (a larger value is a typo: an hour per request, ten retries).
MAX_REQUEST_TIMEOUT_S = 3600.0
MIN_REQUEST_TIMEOUT_S = 0.1
MAX_REQUEST_RETRIES = 10
#: The largest answer read from an endpoint (a chat completion of 32,768 tokens is well under 1 MiB).
MAX_ANSWER_BYTES = 16 << 20
#: HTTP statuses that refuse one request for what it holds: that conversation's reply is an error.
REFUSED = (400, 413, 422)
#: HTTP statuses worth a retry (the endpoint is busy or restarting).
RETRYABLE = (408, 425, 429)


@dataclass
class RequestConfig:
    """How ACE waits for an OpenAI-compatible endpoint: each request's timeout and its retries."""

    timeout_s: float = field(default=120.0, metadata={
        "help": "Seconds a request to an openai: endpoint may wait for it (to connect, then for the whole answer) "
                "before it is retried. Env: ACE_REQUEST_TIMEOUT.",
        "min": MIN_REQUEST_TIMEOUT_S, "max": MAX_REQUEST_TIMEOUT_S})
    retries: int = field(default=3, metadata={
        "help": "Retries of an openai: request that got no answer (no connection, a timeout, HTTP 429 or 5xx), "
                "1 s apart and doubling; then the command stops with an error and stores nothing. "
                "Env: ACE_REQUEST_RETRIES.",
        "min": 0, "max": MAX_REQUEST_RETRIES})

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int):
            raise ConfigError(f"RequestConfig.retries must be a whole number, not {self.retries!r}")
        check_bounds(self)
        if not math.isfinite(self.timeout_s):
            raise ConfigError(f"RequestConfig.timeout_s must be a number of seconds, not {self.timeout_s!r}")

    @classmethod
    def from_env(cls, timeout_s: float | None = None, retries: int | None = None) -> "RequestConfig":
        """Explicit values, else ``ACE_REQUEST_TIMEOUT`` / ``ACE_REQUEST_RETRIES``, else the defaults."""
        defaults = {f.name: f.default for f in fields(cls)}

        def pick(value: Any, env: str, kind: type, name: str) -> Any:
            if value is not None:
                return value
            text = os.environ.get(env)
            if text is None:
                return defaults[name]
            try:
                return kind(text)
            except ValueError:
                raise ConfigError(f"{env}={text!r} is not a {'whole ' if kind is int else ''}number") from None

        return cls(timeout_s=pick(timeout_s, "ACE_REQUEST_TIMEOUT", float, "timeout_s"),
                   retries=pick(retries, "ACE_REQUEST_RETRIES", int, "retries"))


@dataclass
class EndpointConfig:
    """How ACE talks to an OpenAI-compatible endpoint."""

    model: str = field(metadata={"help": "Model name the server knows (vLLM: the --model or --served-model-name)."})
    base_url: str = field(metadata={"help": "Base URL ending in /v1, e.g. http://127.0.0.1:8000/v1."})
    timeout_s: float = field(default=120.0, metadata={"help": "Seconds one request may take."})
    retries: int = field(default=3, metadata={"help": "Retries of a failed request (connection error, 429, 5xx)."})
    backoff_s: float = field(default=1.0, metadata={"help": "First retry delay; doubles each retry."})
    concurrency: int = field(default=8, metadata={"help": "Requests in flight at once."})
    extra_body: dict[str, Any] = field(default_factory=dict, metadata={"help": "Extra request fields."})

    def __post_init__(self) -> None:
        self.base_url = check_base_url(self.base_url)
        if self.concurrency < 1 or self.retries < 0 or self.timeout_s <= 0:
            raise ConfigError("concurrency must be >= 1, retries >= 0 and timeout > 0")


def check_base_url(url: str) -> str:
    """An http(s) URL with a host, no credentials, no query: ``/chat/completions`` is appended to it.

    Refused in one line (never echoing a password) before any request: a malformed URL
    (``http://[::1``, a port that is not a number) would otherwise fail inside the HTTP client.
    """
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as e:
        raise ConfigError(f"base URL {shown!r} is not a valid URL ({e}); give e.g. http://127.0.0.1:8000/v1") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"base URL {shown!r} is not an http(s) URL: it must start with http:// or https://")
    if not url.isascii() or any(c.isspace() or not c.isprintable() for c in url):
        raise ConfigError(f"base URL {shown!r} holds spaces, control or non-ASCII characters; percent-encode them "
                          "(or give the host's punycode name)")
    if "@" in parts.netloc:
        raise ConfigError(f"base URL {shown!r} carries credentials (user:password@); ACE sends none from a URL: "
                          "put the API key in OPENAI_API_KEY (sent as a bearer token)")
    if not parts.hostname:
        raise ConfigError(f"base URL {shown!r} names no host; give e.g. http://127.0.0.1:8000/v1")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise ConfigError(f"base URL {shown!r} has a query or fragment; give the base URL ending in /v1")
    return url


#: ``<model>@<base_url>``: the model is everything before the first ``@http://`` or ``@https://``.
_SPEC = re.compile(r"(?P<model>.+?)@(?P<urls>https?://.*)", re.S)


def split_spec(spec: str) -> tuple[str, str]:
    """``openai:<model>@<urls>`` -> ``(model, urls)`` (``("", "")`` when it is not of that form)."""
    body = spec.partition(":")[2]
    m = _SPEC.fullmatch(body)
    if m:
        return m.group("model"), m.group("urls")
    model, sep, urls = body.rpartition("@")
    return (model, urls) if sep else ("", "")


def parse_endpoints(spec: str, request: RequestConfig | None = None) -> list[EndpointConfig]:
    """``openai:<model>@<base_url>[,<base_url>...]`` as one endpoint config per base URL (``request``: their
    timeout and retries, default :class:`RequestConfig`'s).  Errors never show a password written into a URL."""
    request = request or RequestConfig()
    shown = redact(spec)
    model, urls = split_spec(spec)
    if not model or not urls:
        raise PolicyError(
            f"policy {shown!r}: expected openai:<model>@<base_url>[,<base_url>...], "
            "e.g. openai:smollm2@http://127.0.0.1:8000/v1"
        )
    parts = [u.strip().rstrip("/") for u in urls.split(",")]
    if not all(parts):
        raise PolicyError(f"policy {shown!r}: an empty base URL in the comma-separated list")
    if len(set(parts)) != len(parts):
        raise PolicyError(f"policy {shown!r}: a base URL is listed twice")
    try:
        return [EndpointConfig(model=model, base_url=u, timeout_s=request.timeout_s, retries=request.retries)
                for u in parts]
    except ConfigError as e:
        raise PolicyError(f"policy {shown!r}: {e}") from e


def parse_spec(spec: str) -> EndpointConfig:
    """``openai:<model>@<base_url>`` as an endpoint config (the first, when several are given)."""
    return parse_endpoints(spec)[0]


def _snippet(raw: bytes | str, n: int = 120) -> str:
    """The start of an answer, on one line, with the API key and URL passwords masked (masked before it is cut,
    so a key the endpoint repeats is never shown in part)."""
    text = raw[:n + 4096].decode("utf-8", "replace") if isinstance(raw, bytes) else raw[:n + 4096]
    return redact(" ".join(text.split()), [os.environ.get("OPENAI_API_KEY")])[:n]


def _read_answer(resp: Any, timeout_s: float, where: str) -> bytes:
    """The answer's body, read as it comes: all of it within ``timeout_s``, at most :data:`MAX_ANSWER_BYTES`."""
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = resp.read1(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise EndpointError(f"{where} answered more than {MAX_ANSWER_BYTES >> 20} MiB: not a chat completion")
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise RetryableRequest(f"the answer did not arrive whole within {timeout_s:g} s")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class OpenAIPolicy:
    """A chat-completions endpoint as a policy."""

    def __init__(self, spec: str, config: EndpointConfig | list[EndpointConfig]):
        self.spec = spec
        self.endpoints = list(config) if isinstance(config, list) else [config]
        if not self.endpoints:
            raise PolicyError(f"policy {redact(spec)!r}: no endpoint")
        self.config = self.endpoints[0]
        workers = sum(c.concurrency for c in self.endpoints)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ace-openai")
        self._down: str | None = None  # set by the first request that found the endpoint down: the others stop
        self._stop = threading.Event()

    @classmethod
    def from_spec(cls, spec: str, endpoint: int | None = None,
                  request: RequestConfig | None = None) -> "OpenAIPolicy":
        """The policy of a spec; ``endpoint`` keeps only that one of its base URLs (the spec stays whole);
        ``request``: the requests' timeout and retries."""
        endpoints = parse_endpoints(spec, request)
        if endpoint is not None:
            endpoints = [endpoints[endpoint]]
        return cls(spec, endpoints)

    def endpoint_for(self, conv: Conversation) -> EndpointConfig:
        if len(self.endpoints) == 1:
            return self.endpoints[0]
        return self.endpoints[zlib.crc32(conv.key.encode()) % len(self.endpoints)]

    def _post(self, body: dict[str, Any], endpoint: EndpointConfig) -> Any:
        """The endpoint's answer as JSON; RetryableRequest, RefusedRequest or EndpointError (the module doc)."""
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = f"{endpoint.base_url}/chat/completions"
        try:
            req = urllib.request.Request(url, data=data, headers=headers)
            with urllib.request.urlopen(req, timeout=endpoint.timeout_s) as resp:
                raw = _read_answer(resp, endpoint.timeout_s, url)
        except urllib.error.HTTPError as e:
            try:
                detail = _snippet(e.read(8192), 200)
            except (OSError, http.client.HTTPException):
                detail = ""
            if e.code in RETRYABLE or e.code >= 500:
                raise RetryableRequest(f"HTTP {e.code}: {detail}") from e
            if e.code in REFUSED:
                raise RefusedRequest(f"{endpoint.base_url}: HTTP {e.code}: {detail}") from e
            raise EndpointError(f"{url} answered HTTP {e.code} ({detail or 'no detail'}): check the model name "
                                f"{endpoint.model!r}, the base URL and OPENAI_API_KEY") from e
        except (http.client.InvalidURL, ValueError) as e:  # check_base_url lets none through; a last line
            raise EndpointError(f"{url} cannot be requested: {_snippet(str(e))}") from e
        except urllib.error.URLError as e:
            raise RetryableRequest(_snippet(str(e.reason) or type(e.reason).__name__)) from e
        except (TimeoutError, OSError, http.client.HTTPException) as e:
            raise RetryableRequest(_snippet(str(e) or type(e).__name__)) from e
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise EndpointError(f"{url} answered HTTP 200 with a body that is not JSON ({_snippet(raw)!r}): is "
                                f"{endpoint.base_url} an OpenAI-compatible base URL (ending in /v1)?") from None

    def _fail(self, message: str) -> EndpointError:
        """Record that the endpoint is down (the first to find it says why); the other requests stop."""
        if self._down is None:
            self._down = message
        self._stop.set()
        return EndpointError(self._down)

    def _one(self, conv: Conversation, config: GenerationConfig) -> Reply:
        endpoint = self.endpoint_for(conv)
        body: dict[str, Any] = {
            "model": endpoint.model,
            "messages": conv.messages,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
            "seed": config.seed,
            **endpoint.extra_body,
        }
        if conv.tools:
            body["tools"] = conv.tools
            body["tool_choice"] = "auto"
        delay = endpoint.backoff_s
        last = ""
        attempts = endpoint.retries + 1
        for attempt in range(attempts):
            if self._down is not None:
                raise EndpointError(self._down)
            try:
                answer = self._post(body, endpoint)
                break
            except RetryableRequest as e:
                last = str(e)
                log.warning("request to %s failed (%s); attempt %d of %d", endpoint.base_url, last, attempt + 1,
                            attempts)
                if attempt < endpoint.retries:
                    self._stop.wait(delay)
                    delay *= 2
            except RefusedRequest as e:
                return Reply({"role": "assistant", "content": ""}, finish_reason="error", error=str(e))
            except EndpointError as e:
                raise self._fail(str(e)) from None
        else:
            raise self._fail(
                f"the endpoint {endpoint.base_url} did not answer after {attempts} attempt(s) ({last}); ACE stops "
                "rather than score the outage as the model's failures: check that the server is up, or change "
                "--request-timeout / --request-retries")
        try:
            return _reply(answer)
        except EndpointError as e:
            raise self._fail(f"{endpoint.base_url}: {e}") from None

    def generate(self, conversations: list[Conversation], config: GenerationConfig) -> list[Reply]:
        """One reply per conversation; :class:`EndpointError` (after the requests in flight end) when the
        endpoint is down."""
        if self._down is not None:
            raise EndpointError(self._down)
        futures = [self._pool.submit(self._one, c, config) for c in conversations]
        replies, failed = [], None
        for f in futures:
            try:
                replies.append(f.result())
            except EndpointError as e:
                failed = failed or e
        if failed is not None:
            raise EndpointError(str(failed)) from None
        return replies

    def close(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _reply(answer: Any) -> Reply:
    """A chat completion as a reply; EndpointError when the answer is not one."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise EndpointError(f"the answer is JSON but not a chat completion ({_snippet(json.dumps(answer))!r}): is "
                            "it an OpenAI-compatible base URL (ending in /v1)?")
    content = message.get("content")
    out: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else None}
    if isinstance(message.get("tool_calls"), list) and message["tool_calls"]:
        out["tool_calls"] = message["tool_calls"]
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    finish = choice.get("finish_reason")  # type: ignore[union-attr]
    return Reply(out, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")),
                 finish if isinstance(finish, str) and finish else "stop")
