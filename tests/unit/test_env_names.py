"""No environment's name above ``ace_env``: the layers above ask a task set's environment, never which one it is.

Every product package above ``ace_env`` (ace, ace_graph, synth, train, app) and every ``.cypher`` file is read
for the sites that tie code to one environment (the names come from the registry,
:data:`ace_env.environments.ENVIRONMENTS`, so a third environment is covered as it is registered):

* an import of an environment's package (``ace_env.tau2...``, ``from ace_env import bfcl``) or of a name
  spelled after an environment (``Tau2Task``, ``load_tau2_task_set``, ``BFCL``) from ``ace_env``;
* a string that is an environment's name (``"tau2"``: a name check, a table keyed by name, a task source);
* a comparison with, or a ``startswith``/``endswith``/``removeprefix`` of, a spec of one (``"bfcl:..."``);
* a keyword argument named after one (``load_task_set(spec, tau2=True)``);
* in a ``.cypher`` file: a file name, or a string in the query (comments aside), that names one.

:data:`ALLOWED` lists the sites that remain: none.  BFCL's synthesis strategies and checks (synth/) ask the
catalogue of their seed's environment (``ace_env.environments.tool_catalogue_of``: its tools' classes and docs,
fresh instances of the classes) rather than importing ``ace_env.bfcl``. No ``.cypher`` file names an environment (the schema's migration takes the default environment's
name as ``$default_source``). The training side has none: it asks the tasks' environment (``policy_dialogues``, a
spec's or a result file's environment). It is a ratchet: a new site fails, and so does a listed site that is
gone (take it off the list).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from ace_env import executor
from ace_env.environments import ENVIRONMENTS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ace", "ace_graph", "synth", "train", "app", "cypher")
NAMES = tuple(ENVIRONMENTS)

#: Sites still there, by file: {site: count}.  Only shrinks (see the module doc): none is left.
ALLOWED: dict[str, dict[str, int]] = {}


def _spelled_after_an_environment(identifier: str) -> bool:
    """``Tau2Task``, ``load_tau2_task_set``, ``BFCL``, ``bfcl_tool_info``: an identifier with an environment's
    name as one of its words."""
    return any(re.search(rf"(?i)(^|_|[a-z])({re.escape(n)})($|_|[A-Z0-9])", identifier) for n in NAMES)


def _names_one(value: object) -> bool:
    return isinstance(value, str) and any(value == n or value.startswith(n + ":") for n in NAMES)


def python_sites(source: str) -> Counter[str]:
    """The sites of one Python file (see the module doc), counted by kind and name."""
    out: Counter[str] = Counter()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ace_env":
            parts = node.module.split(".")
            if len(parts) > 1 and parts[1] in NAMES:
                out[f"import {node.module}"] += 1
            for alias in node.names:
                if alias.name in NAMES:
                    out[f"import ace_env.{alias.name}"] += 1
                elif _spelled_after_an_environment(alias.name):
                    out[f"import {alias.name}"] += 1
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "ace_env" and len(parts) > 1 and parts[1] in NAMES:
                    out[f"import {alias.name}"] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
            out[f"literal {node.value!r}"] += 1
        elif isinstance(node, ast.Compare):
            for c in node.comparators:
                if isinstance(c, ast.Constant) and _names_one(c.value) and c.value not in NAMES:
                    out[f"compare {c.value!r}"] += 1
        elif isinstance(node, ast.keyword) and node.arg in NAMES:
            out[f"keyword {node.arg}="] += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith", "removeprefix")):
            for arg in node.args:
                for v in arg.elts if isinstance(arg, ast.Tuple) else [arg]:
                    if (isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value not in NAMES
                            and any(v.value.startswith(n) for n in NAMES)):
                        out[f"{node.func.attr} {v.value!r}"] += 1
    return out


def cypher_sites(name: str, text: str) -> Counter[str]:
    """The sites of one ``.cypher`` file: its name, and strings in the query (not in ``//`` comments)."""
    out: Counter[str] = Counter()
    if _spelled_after_an_environment(name.removesuffix(".cypher").replace("-", "_")):
        out["file name"] += 1
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    for m in re.finditer(r"'([^'\n]*)'|\"([^\"\n]*)\"", code):
        value = m.group(1) if m.group(1) is not None else m.group(2)
        if _names_one(value):
            out[f"literal {value!r}"] += 1
    return out


def all_sites() -> dict[str, Counter[str]]:
    found: dict[str, Counter[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix == ".py":
                sites = python_sites(path.read_text(encoding="utf-8"))
            elif path.suffix == ".cypher":
                sites = cypher_sites(path.name, path.read_text(encoding="utf-8"))
            else:
                continue
            if sites:
                found[path.relative_to(ROOT).as_posix()] = sites
    return found


def test_no_environment_name_above_ace_env_but_the_listed_sites():
    found = all_sites()
    new = {f"{path}: {site} ×{n - ALLOWED.get(path, {}).get(site, 0)}"
           for path, sites in found.items() for site, n in sites.items() if n > ALLOWED.get(path, {}).get(site, 0)}
    assert not new, ("code above ace_env names an environment; ask the task set's environment "
                     f"(ace_env.environments) instead: {sorted(new)}")


def test_the_allowlist_only_shrinks():
    """A listed site that is gone (or fewer of it) is taken off the list, so the list says what remains."""
    found = all_sites()
    gone = {f"{path}: {site} (listed {n}, found {found.get(path, Counter())[site]})"
            for path, sites in ALLOWED.items() for site, n in sites.items() if found.get(path, Counter())[site] < n}
    assert not gone, f"take these off ALLOWED in {Path(__file__).name}: {sorted(gone)}"


def test_the_scanner_finds_each_kind_of_site():
    """What a wrong scanner would miss: each kind of site, and nothing in a neutral file."""
    names = ", ".join(NAMES)
    assert NAMES[:2] == ("bfcl", "tau2"), names  # the examples below are written with these two
    source = ("from ace_env.tau2.tasks import Tau2Task\nfrom ace_env import bfcl\nfrom ace_env.environments import BFCL\n"
              "import ace_env.tau2.sim\n"
              "if env.name == 'tau2' or spec.startswith(('bfcl:', 'x')) or spec != 'tau2:airline':\n"
              "    load(spec, tau2=True)\n")
    assert python_sites(source) == Counter({
        "import ace_env.tau2.tasks": 1, "import Tau2Task": 1, "import ace_env.bfcl": 1, "import BFCL": 1,
        "import ace_env.tau2.sim": 1, "literal 'tau2'": 1, "startswith 'bfcl:'": 1, "compare 'tau2:airline'": 1,
        "keyword tau2=": 1})
    neutral = ("from ace_env.environments import DEFAULT, environment_of\n"
               "spec = f'{DEFAULT.name}:all'  # bfcl by default\n"
               "if environment_of(tasks).dialogues:\n    pass\n")
    assert python_sites(neutral) == Counter()
    assert cypher_sites("tau2-checks.cypher", "// 'tau2' in a comment\nMATCH (t) WHERE t.source IN ['bfcl', 'tau2']\n"
                        "RETURN 'tau2:airline'") == Counter({"file name": 1, "literal 'bfcl'": 1, "literal 'tau2'": 1,
                                                            "literal 'tau2:airline'": 1})
    assert cypher_sites("view-scope-environments.cypher", "// ['bfcl', 'tau2']\nWHERE t.source IN $environments") == Counter()


#: The files that still import the executor's rollout state by its old name, ``Environment`` (it is
#: :class:`ace_env.executor.RolloutState`; an environment is a ToolEnvironment): none, and the alias is gone.
OLD_STATE_NAME: set[str] = set()


def test_one_name_per_concept_the_old_rollout_state_name_only_shrinks():
    assert not hasattr(executor, "Environment"), "the executor's rollout state has one name: RolloutState"
    users = set()
    for package in ("ace_env", *PACKAGES[:-1], "tests", "benchmarks"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.ImportFrom) and node.module == "ace_env.executor"
                        and any(a.name == "Environment" for a in node.names)):
                    users.add(path.relative_to(ROOT).as_posix())
    assert users == OLD_STATE_NAME, (f"new: {sorted(users - OLD_STATE_NAME)}; gone (take them off "
                                     f"OLD_STATE_NAME): {sorted(OLD_STATE_NAME - users)}")
