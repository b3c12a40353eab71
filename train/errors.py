"""Errors of the training layer that modules outside :mod:`train.policies` raise too.

:class:`PolicyError` lives here rather than in :mod:`train.policies.base` so that
:mod:`train.models` (which the ``hf:`` policy imports) can raise it without
importing the policies package, which would import ``hf`` back: a cycle that
broke ``from train.models import resolve_model`` as a first import.
"""

from __future__ import annotations

from ace_env.errors import AceError


class PolicyError(AceError):
    """A policy cannot be loaded or cannot answer (bad spec, missing model, endpoint down)."""
