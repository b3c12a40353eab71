"""One exception tree: every package's errors module derives its errors from that package's base, and every base
from ``AceError``, so a caller catches one layer's errors, or all of ACE's, with one ``except``."""

from __future__ import annotations

import importlib
import inspect

import pytest

from ace_env.errors import AceError, ConfigError, RolloutFormatError
from ace_graph.errors import GraphError, RolloutIdConflict, ScopeError

#: package errors module -> its base (ace_env's is the root itself)
BASES = {
    "ace_env.errors": "AceError",
    "ace_graph.errors": "GraphError",
    "synth.errors": "SynthError",
    "train.errors": "TrainError",
    "app.errors": "AppError",
}

#: internal signals that never leave the function that raises them, kept out of ``AceError`` on purpose so no
#: ``except AceError`` on the way swallows them
INTERNAL = {("ace_env.errors", "JsonRefused"), ("train.errors", "RetryableRequest"), ("train.errors", "RefusedRequest")}


@pytest.mark.parametrize("module_name", sorted(BASES))
def test_every_error_of_a_package_derives_from_its_base(module_name):
    module = importlib.import_module(module_name)
    base = getattr(module, BASES[module_name])
    assert issubclass(base, AceError)
    own = [c for _, c in inspect.getmembers(module, inspect.isclass)
           if c.__module__ == module_name and issubclass(c, BaseException)]
    assert base in own or module_name == "ace_env.errors"
    wrong = [c.__name__ for c in own if (module_name, c.__name__) not in INTERNAL and not issubclass(c, base)]
    assert not wrong, f"{module_name}: {wrong} do not derive from {base.__name__}"


def test_graph_errors_keep_their_input_error_class():
    assert issubclass(ScopeError, GraphError) and issubclass(ScopeError, ConfigError)
    assert issubclass(RolloutIdConflict, GraphError) and issubclass(RolloutIdConflict, RolloutFormatError)
