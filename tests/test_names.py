"""One concept, one class name: no class name is defined in two modules of ``worker/`` and
``contracts/``, read from the source with ``ast`` (nested classes count too).

A leading underscore does not make a name another: ``_Declared`` beside ``Declared`` reads
as the same thing to whoever greps for it, so names are compared without it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parent.parent

# Duplicates left on purpose, each with why; a listed duplicate that no longer exists
# fails too, so the list only shrinks.
ALLOWED: Final[dict[str, frozenset[str]]] = {}


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def class_modules(
    root: Path = ROOT, packages: tuple[str, ...] = ("worker", "contracts")
) -> dict[str, set[str]]:
    """Each class name (leading underscores dropped) with the modules that define it."""
    defined: defaultdict[str, set[str]] = defaultdict(set)
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    defined[node.name.lstrip("_")].add(_module_name(root, path))
    return dict(defined)


def test_no_class_name_is_defined_in_two_modules() -> None:
    duplicated = {
        name: sorted(modules)
        for name, modules in class_modules().items()
        if len(modules) > 1 and frozenset(modules) != ALLOWED.get(name)
    }
    assert duplicated == {}, (
        "one concept, one name: keep one class where two are the same thing, else rename "
        f"so the names say the difference: {duplicated}"
    )


def test_the_allowed_duplicates_still_exist() -> None:
    defined = class_modules()
    stale = {name for name, modules in ALLOWED.items() if defined.get(name) != set(modules)}
    assert stale == set(), f"no longer duplicated as listed, drop from ALLOWED: {stale}"


def test_a_duplicate_is_found_across_modules_and_underscores(tmp_path: Path) -> None:
    # The scan itself: a private class and a nested one count as the public name.
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("class Job:\n    pass\n", encoding="utf-8")
    (package / "b.py").write_text("def f():\n    class _Job:\n        pass\n", encoding="utf-8")
    assert class_modules(tmp_path, ("pkg",)) == {"Job": {"pkg.a", "pkg.b"}}
