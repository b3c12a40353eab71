"""An environment's tools as classes with documented functions: its entry's ``tool_catalogue``
(:class:`ToolCatalogue`).

Synthesis strategies that add, drop or look up tools by their documentation (``synth/strategies/``: the random
baseline's distractors, the probes' read-only calls, the look-alikes' state, the conversions a parameter's
documented unit or format allows; ``synth/checks/values.py``: a documented default or enum member as a value's
provenance) ask the catalogue of the environment of the task they work on
(:func:`ace_env.environments.tool_catalogue_of`), never a benchmark's package.  The catalogue gives:

* ``functions()``: every tool by name, each an object with ``name``, ``class_name`` (the tool's class) and
  ``doc`` (its JSON-schema documentation: ``description``, ``parameters`` with their ``properties``, each
  with its ``description`` and any ``default``, and ``required``);
* ``instance(class_name, config)``: a fresh instance of a tool class, loaded from ``config`` (the part of a
  task's initial configuration that belongs to the class; short context); it raises for a class it does not
  know or a configuration it cannot load.

BFCL's is :data:`ace_env.bfcl.environment.BFCL_CATALOGUE` (its 128 multi-turn functions and their classes).
An environment whose tools are not such classes (τ²-bench's, the tests' toy) has none: its entry's
``tool_catalogue`` is None, and its synthesis declares strategies that do not need one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolCatalogue:
    """An environment's tools, their classes and documentation, and fresh instances of the classes (the module
    doc).  Hashable, so functions cached per tool may take it as an argument."""

    functions: Callable[[], Mapping[str, Any]]
    instance: Callable[[str, Mapping[str, Any]], Any]
