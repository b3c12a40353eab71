"""The training layer's errors, on top of ``ace_env.errors`` (one root: ``AceError``).

:class:`PolicyError` lives here rather than in :mod:`train.policies.base` so that
:mod:`train.models` (which the ``hf:`` policy imports) can raise it without
importing the policies package, which would import ``hf`` back: a cycle that
broke ``from train.models import resolve_model`` as a first import.
"""

from __future__ import annotations

from ace_env.errors import AceError


class TrainError(AceError):
    """Base of every error the training layer raises on purpose (a caller may catch it, or ``AceError`` for all of
    ACE).  The two request signals below are internal to the OpenAI policy and derive from ``Exception`` only, so
    that no ``except AceError`` on the way can swallow a retry."""


class PolicyError(TrainError):
    """A policy cannot be loaded or cannot answer (bad spec, missing model, endpoint down)."""


class EndpointError(PolicyError):
    """An OpenAI-compatible endpoint cannot be reached or does not answer as one (no connection, a timeout,
    HTTP 5xx after the retries, an answer that is not a chat completion): the run stops, because scoring an
    outage as the model's failures would store a wrong measurement."""


class RetryableRequest(Exception):
    """A request to an OpenAI-compatible endpoint that failed in a way worth retrying (connection error, 429, 5xx);
    :class:`train.policies.openai.OpenAIPolicy` retries it (internal: never leaves the policy)."""


class RefusedRequest(Exception):
    """An endpoint refused one request for what it holds (HTTP 400, 413, 422: e.g. longer than the model's
    context): that conversation's reply is an error, recorded on its rollout (internal: never leaves the policy)."""


class ExportError(TrainError):
    """A dataset could not be exported."""


class CurriculumStoreError(TrainError):
    """The curriculum could not be read from or written to the graph."""


class CurriculumConflictError(CurriculumStoreError):
    """Another step advanced the curriculum between this step's read and its write."""


class EnvironmentUseError(TrainError):
    """An environment was used in a way it cannot serve (no task, a row for another tool set)."""
