"""``openai:<model>@<base_url>[,<base_url>...]``: OpenAI-compatible chat endpoints (vLLM, SGLang, a hosted API).

Several base URLs (comma-separated, e.g. several vLLM servers of one model)
share the conversations: each conversation goes to one endpoint, chosen from
its key (``crc32(key) % n``), so the same conversation always meets the same
server; ``ace rollout --ray`` instead gives each endpoint its own Ray actor.

Tools go out as ``tools``; calls come back in ``tool_calls`` (or as Hermes text,
which the rollout engine's parser reads too).  Requests of a batch run
concurrently, at most ``concurrency`` at a time; each has a timeout, and
connection errors, 429 and 5xx answers are retried with exponential backoff.
An answer that still fails is a reply with ``finish_reason="error"`` (the
rollout records it), not a crash of the batch.  The API key, if any, is read
from ``OPENAI_API_KEY``.  Only the standard library is used.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ace_env.errors import ConfigError
from train.errors import RetryableRequest
from train.policies.base import Conversation, GenerationConfig, PolicyError, Reply

log = logging.getLogger(__name__)


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
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base URL {self.base_url!r} must start with http:// or https://")
        if self.concurrency < 1 or self.retries < 0 or self.timeout_s <= 0:
            raise ConfigError("concurrency must be >= 1, retries >= 0 and timeout > 0")


def parse_endpoints(spec: str) -> list[EndpointConfig]:
    """``openai:<model>@<base_url>[,<base_url>...]`` as one endpoint config per base URL."""
    body = spec.partition(":")[2]
    model, sep, urls = body.rpartition("@")
    if not sep or not model or not urls:
        raise PolicyError(
            f"policy {spec!r}: expected openai:<model>@<base_url>[,<base_url>...], "
            "e.g. openai:smollm2@http://127.0.0.1:8000/v1"
        )
    parts = [u.strip().rstrip("/") for u in urls.split(",")]
    if not all(parts):
        raise PolicyError(f"policy {spec!r}: an empty base URL in the comma-separated list")
    if len(set(parts)) != len(parts):
        raise PolicyError(f"policy {spec!r}: a base URL is listed twice")
    try:
        return [EndpointConfig(model=model, base_url=u) for u in parts]
    except ConfigError as e:
        raise PolicyError(f"policy {spec!r}: {e}") from e


def parse_spec(spec: str) -> EndpointConfig:
    """``openai:<model>@<base_url>`` as an endpoint config (the first, when several are given)."""
    return parse_endpoints(spec)[0]


class OpenAIPolicy:
    """A chat-completions endpoint as a policy."""

    def __init__(self, spec: str, config: EndpointConfig | list[EndpointConfig]):
        self.spec = spec
        self.endpoints = list(config) if isinstance(config, list) else [config]
        if not self.endpoints:
            raise PolicyError(f"policy {spec!r}: no endpoint")
        self.config = self.endpoints[0]
        workers = sum(c.concurrency for c in self.endpoints)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ace-openai")

    @classmethod
    def from_spec(cls, spec: str, endpoint: int | None = None) -> "OpenAIPolicy":
        """The policy of a spec; ``endpoint`` keeps only that one of its base URLs (the spec stays whole)."""
        endpoints = parse_endpoints(spec)
        if endpoint is not None:
            endpoints = [endpoints[endpoint]]
        return cls(spec, endpoints)

    def endpoint_for(self, conv: Conversation) -> EndpointConfig:
        if len(self.endpoints) == 1:
            return self.endpoints[0]
        return self.endpoints[zlib.crc32(conv.key.encode()) % len(self.endpoints)]

    def _post(self, body: dict[str, Any], endpoint: EndpointConfig) -> dict[str, Any]:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(f"{endpoint.base_url}/chat/completions", data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=endpoint.timeout_s) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            if e.code == 429 or e.code >= 500:
                raise RetryableRequest(f"HTTP {e.code}: {detail}") from e
            raise PolicyError(f"{endpoint.base_url}: HTTP {e.code}: {detail}") from e
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
            raise RetryableRequest(f"{type(e).__name__}: {e}") from e

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
        for attempt in range(endpoint.retries + 1):
            try:
                answer = self._post(body, endpoint)
                break
            except RetryableRequest as e:
                last = str(e)
                log.warning("request to %s failed (%s); attempt %d", endpoint.base_url, last, attempt + 1)
                if attempt < endpoint.retries:
                    time.sleep(delay)
                    delay *= 2
            except PolicyError as e:
                return Reply({"role": "assistant", "content": ""}, finish_reason="error", error=str(e))
        else:
            return Reply({"role": "assistant", "content": ""}, finish_reason="error",
                         error=f"{endpoint.base_url}: no answer after {endpoint.retries + 1} attempts ({last})")
        try:
            choice = answer["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            return Reply({"role": "assistant", "content": ""}, finish_reason="error",
                         error=f"not a chat completion: {json.dumps(answer)[:200]}")
        out = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            out["tool_calls"] = message["tool_calls"]
        usage = answer.get("usage") or {}
        return Reply(out, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                     str(choice.get("finish_reason") or "stop"))

    def generate(self, conversations: list[Conversation], config: GenerationConfig) -> list[Reply]:
        return list(self._pool.map(lambda c: self._one(c, config), conversations))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
