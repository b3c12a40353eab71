"""Helpers over GorillaFileSystem configurations (nested ``contents`` dicts)."""

from __future__ import annotations

from typing import Any

from ace_env.executor import RolloutState


def fs_dirs(contents: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for name, node in contents.items():
        if isinstance(node, dict) and node.get("type") == "directory":
            out.extend(fs_dirs(node.get("contents", {}), path + (name,)))
    return out


def fs_files(contents: dict[str, Any], path: tuple[str, ...] = ()) -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """File name -> [(directory path, content)]."""
    out: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for name, node in contents.items():
        if not isinstance(node, dict):
            continue
        if node.get("type") == "file":
            out.setdefault(name, []).append((path, node.get("content", "")))
        elif node.get("type") == "directory":
            for k, v in fs_files(node.get("contents", {}), path + (name,)).items():
                out.setdefault(k, []).extend(v)
    return out


def fs_contents(config: dict[str, Any]) -> dict[str, Any] | None:
    root = config.get("GorillaFileSystem", {}).get("root")
    if not isinstance(root, dict) or len(root) != 1:
        return None
    node = next(iter(root.values()))
    return node.get("contents") if isinstance(node, dict) else None


def fs_dir(contents: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    for name in path:
        node = contents.get(name)
        if not isinstance(node, dict) or node.get("type") != "directory":
            return None
        contents = node.setdefault("contents", {})
    return contents


def fs_cwd(env: RolloutState) -> tuple[str, ...] | None:
    fs = env.instances.get("GorillaFileSystem")
    if fs is None:
        return None
    path, d = [], fs._current_dir
    while d is not None and d is not fs.root:
        path.append(d.name)
        d = d.parent
    return tuple(reversed(path))
