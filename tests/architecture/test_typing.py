"""Every function of memdash is annotated, and mypy is set up to keep it so.

mypy (`.venv/bin/mypy`, configured in pyproject.toml) checks the types; this test only makes
sure that an unannotated function, or a setting that would let one through, fails the suite
even where mypy is not run."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KEPT_ON = ("disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs")


def _mypy_settings() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as stream:
        return tomllib.load(stream)["tool"]["mypy"]


def test_mypy_requires_annotations_everywhere() -> None:
    mypy = _mypy_settings()
    assert mypy["files"] == ["memdash"]
    for name in KEPT_ON:
        assert mypy[name] is True, name
    for override in mypy.get("overrides", []):  # no module is let off
        for name in KEPT_ON:
            assert override.get(name, True) is True, (override["module"], name)
        assert not override.get("ignore_errors", False), override["module"]


def _unannotated(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    missing = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        bare = [a.arg for a in params if a.annotation is None and a.arg not in ("self", "cls")]
        # mypy takes `__init__(self, x: int)` without `-> None` as annotated
        needs_return = node.name != "__init__" or not any(a.annotation for a in params)
        if bare or (needs_return and node.returns is None):
            what = f"parameters {', '.join(bare)}" if bare else "the return type"
            missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {what}")
    return missing


def test_every_function_is_annotated() -> None:
    missing = [
        line
        for path in sorted((ROOT / "memdash").rglob("*.py"))
        if "migrations" not in path.parts
        for line in _unannotated(path)
    ]
    assert not missing, "unannotated:\n" + "\n".join(missing)
