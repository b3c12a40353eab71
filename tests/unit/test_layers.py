"""The layers contract (pyproject.toml, [tool.importlinter]) holds, and no import
of ACE's own modules hides inside a function to dodge it."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ace_env", "ace_graph", "cypher", "synth", "train", "app", "ace")


def _lint_imports() -> str:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is not installed (it is in the test extra: pip install -e '.[test]')"
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_layers_contract_is_kept():
    out = _lint_imports()
    assert "ACE layers KEPT" in out


def test_no_ace_import_inside_functions():
    hidden = []
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(fn):
                    names = []
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        names = [node.module]
                    elif isinstance(node, ast.Import):
                        names = [a.name for a in node.names]
                    for name in names:
                        if name.split(".")[0] in PACKAGES:
                            hidden.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert not hidden, "imports of ACE modules inside functions:\n" + "\n".join(hidden)


def _modules(packages: tuple[str, ...]) -> list[str]:
    names = []
    for pkg in packages:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_module_imports_first_in_a_fresh_interpreter():
    """An import cycle shows only when a module of the cycle is the first one imported
    (``from train.models import resolve_model`` failed that way while ``import train.policies`` worked)."""
    def first_import(name: str) -> str | None:
        try:
            proc = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True,
                                  timeout=120)
        except subprocess.TimeoutExpired:
            return f"{name}: importing it took over 120 s"
        last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return None if proc.returncode == 0 else f"{name}: {last}"

    # app/ and ace/ import Streamlit and the CLI stack; their cycles would show in their own tests' imports.
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(first_import, _modules(("ace_env", "cypher", "ace_graph", "synth", "train"))) if f]
    assert not failures, "modules that cannot be imported first:\n" + "\n".join(failures)


def test_every_package_is_in_the_wheel():
    """pyproject's explicit package list names every folder with an ``__init__.py`` under the product packages: a
    package left out is missing from a non-editable install (the install check's `ace --help` fails on it)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in PACKAGES for p in (ROOT / top).rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found - listed == set(), f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert listed - found == set(), f"not a package any more: {sorted(listed - found)}"
