"""The Skill Dependency Graph's nodes: atomic tool-use skills, loaded from data.

The taxonomy lives in ``ace_graph/skills.toml``: a list of ``[[skill]]`` entries
(id, family, description) and a ``[tools]`` table that maps every BFCL
multi-turn function to the 1-3 base skills it exercises.  Both are validated
when loaded; bad data raises :class:`~ace_graph.errors.ConfigError` naming the
offending entry.

>>> skills = load_taxonomy()
>>> skills["abstain"].family
'verification'
>>> tool_skills()["place_order"]
('transaction',)
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ace_graph.errors import ConfigError

#: The skill families; every skill belongs to exactly one.
FAMILIES = (
    "information_acquisition",
    "computation",
    "verification",
    "state_handling",
    "communication",
)

#: Skills the tagger assigns from how a call's arguments were obtained or from
#: the task's structure, not from the tool itself.  The taxonomy must define them.
DERIVED_SKILLS = ("param_from_user", "param_from_output", "result_extraction", "state_precondition", "abstain")

#: Most base skills one tool may map to.
MAX_TOOL_SKILLS = 3

DEFAULT_PATH = Path(__file__).resolve().parent / "skills.toml"

_ID = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Skill:
    """One atomic tool-use skill: a node of the Skill Dependency Graph."""

    id: str
    family: str
    description: str


def load_taxonomy(path: str | Path | None = None) -> dict[str, Skill]:
    """Every skill by id, in file order (validated; cached per file).

    ``path`` defaults to the packaged ``skills.toml``; tests pass their own.
    """
    return dict(_load(_resolve(path))[0])


def tool_skills(path: str | Path | None = None,
                own: Iterable[tuple[str, Mapping[str, Sequence[str]]]] = ()) -> dict[str, tuple[str, ...]]:
    """Base skills of every tool, by function name (validated; cached per file).

    ``own``: (environment, its tools' base skills) pairs, as
    :func:`ace_env.environments.own_tool_skills` gives them; each table is validated as ``[tools]`` is and
    added, and a tool ``[tools]`` (or an earlier table) maps already is refused: a tool name is one Tool node.
    """
    skills, tools = _load(_resolve(path))
    out = dict(tools)
    for env, table in own:
        where = f"the {env} environment's tool_skills"
        added = _tools(where, {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()}, skills)
        clash = sorted(set(added) & set(out))
        if clash:
            raise ConfigError(f"{where}: tool {clash[0]!r} has base skills already (in {_resolve(path).name} or "
                              "another environment); a tool name is one Tool node: rename the tool, or map it once")
        out.update(added)
    return out


def clear_cache() -> None:
    """Forget loaded taxonomies (after editing a file in place)."""
    _load.cache_clear()


def _resolve(path: str | Path | None) -> Path:
    return DEFAULT_PATH if path is None else Path(path).resolve()


@functools.lru_cache(maxsize=16)
def _load(path: Path) -> tuple[dict[str, Skill], dict[str, tuple[str, ...]]]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(
            f"Cannot read the skill taxonomy {path}: {e}. Pass the path of an existing skills TOML file."
        ) from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(
            f"The skill taxonomy {path} is not valid TOML: {e}. "
            "Fix the syntax (a tool listed twice in [tools] is a duplicate key)."
        ) from e
    skills = _skills(path, data.get("skill"))
    tools = _tools(path, data.get("tools"), skills)
    return skills, tools


def _skills(path: Path, entries: Any) -> dict[str, Skill]:
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: no [[skill]] entries. Declare each skill as a [[skill]] table.")
    skills: dict[str, Skill] = {}
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: skill entry #{n} is not a table.")
        where = f"{path}: skill entry #{n} ({entry.get('id', '<no id>')!r})"
        unknown = sorted(set(entry) - {"id", "family", "description"})
        if unknown:
            raise ConfigError(f"{where} has unknown keys {unknown}; allowed: id, family, description.")
        sid, family, description = entry.get("id"), entry.get("family"), entry.get("description")
        if not isinstance(sid, str) or not _ID.match(sid):
            raise ConfigError(
                f"{where}: id must be a lower-case identifier (letters, digits, underscores), got {sid!r}."
            )
        if sid in skills:
            raise ConfigError(f"{where}: duplicate skill id {sid!r}. Every skill id must be unique.")
        if family not in FAMILIES:
            raise ConfigError(f"{where}: unknown family {family!r}. Use one of {list(FAMILIES)}.")
        if not isinstance(description, str) or not description.strip():
            raise ConfigError(f"{where}: empty description. Give the skill a one-line description.")
        skills[sid] = Skill(sid, family, description.strip())
    missing = [s for s in DERIVED_SKILLS if s not in skills]
    if missing:
        raise ConfigError(
            f"{path}: the tagger needs the skills {missing}, which the taxonomy does not define. Add them."
        )
    return skills


def _tools(path: Path | str, table: Any, skills: dict[str, Skill]) -> dict[str, tuple[str, ...]]:
    if not isinstance(table, dict) or not table:
        raise ConfigError(f"{path}: no [tools] table. Map every tool to its base skills under [tools].")
    tools: dict[str, tuple[str, ...]] = {}
    for name, ids in table.items():
        where = f"{path}: tool {name!r}"
        if not isinstance(ids, list) or not 1 <= len(ids) <= MAX_TOOL_SKILLS:
            raise ConfigError(f"{where} must map to a list of 1-{MAX_TOOL_SKILLS} skill ids, got {ids!r}.")
        for sid in ids:
            if sid not in skills:
                raise ConfigError(
                    f"{where} maps to unknown skill {sid!r}. Use a skill id declared as [[skill]], "
                    "or declare it."
                )
        if len(set(ids)) != len(ids):
            raise ConfigError(f"{where} lists a skill twice: {ids!r}.")
        tools[name] = tuple(ids)
    return tools


__all__ = ["DERIVED_SKILLS", "FAMILIES", "Skill", "clear_cache", "load_taxonomy", "tool_skills"]
