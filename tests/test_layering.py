"""The import rules between the packages (docs/architecture.md, "Layering rules"), read from the
source with ``ast`` so an import inside a function or under ``TYPE_CHECKING`` counts too.

- ``worker/store`` and ``worker/tools`` import no ``nats``: transport is the runtime's.
- ``worker/store`` imports nothing from ``worker/tools`` or ``worker/runtime``.
- ``worker/runtime`` imports the tools only through ``worker.tools``'s exported names.
- ``contracts`` (imported by other runtimes) imports nothing from ``worker``.
- The modules every layer shares (``worker.logs``, ``worker.retry``, ``worker.tasks``) import
  nothing from ``worker`` but each other, so sharing them adds no edge between the layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import worker.tools

ROOT = Path(__file__).resolve().parent.parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _files(package: str) -> list[Path]:
    base = ROOT / package.replace(".", "/")
    return (
        [base.with_suffix(".py")]
        if base.with_suffix(".py").is_file()
        else sorted(base.rglob("*.py"))
    )


def _imports(package: str) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(importing file, imported module, names taken from it) for every import in
    ``package``; relative imports are resolved against the importing module."""
    for path in _files(package):
        module = _module_name(path)
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield where, alias.name, ()
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
                if node.level:
                    base = module.split(".")
                    base = base[: len(base) - node.level + (1 if is_package else 0)]
                    target = ".".join([*base, target] if target else base)
                yield where, target, tuple(alias.name for alias in node.names)


def _within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_rules_see_imports() -> None:
    # A guard on the guard: if the walk found nothing, every rule below would pass vacuously.
    found = {name for _, name, _ in _imports("worker.runtime")}
    assert "worker.tools" in found
    assert "nats" in found or any(_within(n, "nats") for n in found)
    assert any(_within(n, "worker.store") for n in found)


@pytest.mark.parametrize("package", ["worker.store", "worker.tools"])
def test_store_and_tools_import_no_nats(package: str) -> None:
    bad = [
        f"{where} imports {name}" for where, name, _ in _imports(package) if _within(name, "nats")
    ]
    assert bad == []


def test_store_imports_neither_tools_nor_runtime() -> None:
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports("worker.store")
        if _within(name, "worker.tools", "worker.runtime")
    ]
    assert bad == []


def test_runtime_imports_tools_only_through_the_package() -> None:
    public = set(worker.tools.__all__)
    bad = []
    for where, name, names in _imports("worker.runtime"):
        if not _within(name, "worker.tools"):
            continue
        if name != "worker.tools":
            bad.append(f"{where} imports {name}")
        bad.extend(f"{where} takes worker.tools.{n}" for n in names if n not in public)
    assert bad == []


def test_contracts_import_nothing_from_worker() -> None:
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports("contracts")
        if _within(name, "worker")
    ]
    assert bad == []


SHARED = ("worker.logs", "worker.retry", "worker.tasks")


@pytest.mark.parametrize("module", SHARED)
def test_shared_modules_import_nothing_from_worker(module: str) -> None:
    assert _files(module), module
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports(module)
        if _within(name, "worker") and not any(_within(name, shared) for shared in SHARED)
    ]
    assert bad == []


def test_the_ui_is_a_requester() -> None:
    """``sessionquery ui`` reads through the workers over NATS: it imports neither the store
    nor the tools (so never the index file), and nothing of the worker imports it."""
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports("worker.ui")
        if _within(name, "worker.store", "worker.tools")
    ]
    for package in ("worker.store", "worker.tools", "worker.runtime"):
        bad += [
            f"{where} imports {name}"
            for where, name, _ in _imports(package)
            if _within(name, "worker.ui")
        ]
    assert bad == []
