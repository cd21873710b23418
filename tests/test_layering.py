"""The import rules between the packages (docs/architecture.md, "Layering rules"), read from the
source with ``ast`` so an import inside a function or under ``TYPE_CHECKING`` counts too.

- ``worker/store`` and ``worker/tools`` import no ``nats``: transport is the runtime's.
- ``worker/store`` imports nothing from the replica (ingestion is the replica's: its actor,
  batching, retries and dead letters; the store is what it writes into, through the writer
  protocol), nor from the tools, serving, the commands or the transport.
- The runtime (serving, replica, commands, the worker's composition) imports the tools only
  through ``worker.tools``'s exported names.
- ``contracts`` (imported by other runtimes) imports nothing from ``worker``.
- The modules every layer shares (``worker.logs``, ``worker.log_sink``, ``worker.retry``,
  ``worker.tasks``, ``worker.failures``, ``worker.actors``, ``worker.memory``) import nothing
  from ``worker`` but each other, so sharing them adds no edge between the layers.
- Requesters (importers, the MCP bridge, the UI, and the commands that only ask: ``call``,
  ``import``, ``mcp``, ``ui``) never import serving, the replica or the store.
- The transport imports nothing above it (store, tools, runtime).
- The tools reach the store only through its protocol (``STORE_PROTOCOL``).
- No two packages import each other.
- No module reaches itself through imports, package ``__init__``s modelled (``_graph``).
- No import inside a function (or under ``TYPE_CHECKING``) closes a cycle: a deferred
  import may keep start-up cheap, never hide a loop between modules.
"""

from __future__ import annotations

import ast
import functools
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


RUNTIME = ("worker.serving", "worker.replica", "worker.commands", "worker.worker")


def _imports_of(*packages: str) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    for package in packages:
        yield from _imports(package)


def test_the_rules_see_imports() -> None:
    # A guard on the guard: if the walk found nothing, every rule below would pass vacuously.
    found = {name for _, name, _ in _imports_of(*RUNTIME)}
    assert "worker.tools" in found
    assert "nats" in found or any(_within(n, "nats") for n in found)
    assert any(_within(n, "worker.store") for n in found)


@pytest.mark.parametrize("package", ["worker.store", "worker.tools"])
def test_store_and_tools_import_no_nats(package: str) -> None:
    bad = [
        f"{where} imports {name}" for where, name, _ in _imports(package) if _within(name, "nats")
    ]
    assert bad == []


@pytest.mark.parametrize(
    "above", list(dict.fromkeys(["worker.replica", *RUNTIME, "worker.tools", "worker.transport"]))
)
def test_store_imports_nothing_above_it(above: str) -> None:
    """The replica ingests into the store (its actor calls the writer protocol's ``stage``)
    and never the other way round: nothing of ingestion calls back from the store."""
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports("worker.store")
        if _within(name, above)
    ]
    assert bad == []


def test_transport_imports_nothing_above_it() -> None:
    """The transport is the bottom layer of the runtime: what it needs (the subscriptions'
    pending limits) lives in it, not in what serves above it."""
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports("worker.transport")
        if _within(name, "worker.store", "worker.tools", *RUNTIME)
    ]
    assert bad == []


# What the store offers the tools: its protocol, result and error types (and the reading of
# an excerpt's marks), never the SQLite provider or the search engine behind them.
STORE_PROTOCOL = (
    "worker.store",
    "worker.store.protocol",
    "worker.store.errors",
    "worker.store.operator",
)


def test_tools_reach_the_store_through_its_protocol() -> None:
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports("worker.tools")
        if _within(name, "worker.store") and name not in STORE_PROTOCOL
    ]
    assert bad == []


def _packages() -> list[str]:
    return sorted(
        _module_name(path)
        for package in ("worker", "contracts")
        for path in _files(package)
        if path.name == "__init__.py"
    )


def test_no_two_packages_import_each_other() -> None:
    """For any two packages, neither inside the other, at most one imports the other (its
    modules and sub-packages counted): a pair that do are one layer split in two, or a
    lower layer reaching up."""
    packages = [p for p in _packages() if p not in ("worker", "contracts")]
    uses: dict[str, set[str]] = {p: set() for p in packages}
    for package in packages:
        for _, name, names in _imports(package):
            for other in packages:
                if _within(other, package) or _within(package, other):
                    continue
                taken = (f"{name}.{n}" for n in names)
                if _within(name, other) or any(_within(t, other) for t in taken):
                    uses[package].add(other)
    assert {"worker.tools", "worker.transport"} <= uses["worker.serving"]  # the walk sees them
    bad = sorted(f"{a} <-> {b}" for a in packages for b in uses[a] if a < b and a in uses[b])
    assert bad == []


def test_runtime_imports_tools_only_through_the_package() -> None:
    public = set(worker.tools.__all__)
    bad = []
    for where, name, names in _imports_of(*RUNTIME):
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


SHARED = (
    "worker.logs",
    "worker.log_sink",
    "worker.retry",
    "worker.tasks",
    "worker.failures",
    "worker.actors",
    "worker.memory",
    "worker.settings",
    "worker.config",
)


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
    for package in ("worker.store", "worker.tools", "worker.transport", *RUNTIME):
        bad += [
            f"{where} imports {name}"
            for where, name, _ in _imports(package)
            if _within(name, "worker.ui") and package != "worker.commands"
        ]
    assert bad == []


REQUESTERS = (
    "worker.importers",
    "worker.mcp_bridge",
    "worker.ui",
    "worker.commands.call",
    "worker.commands.importing",
    "worker.commands.watching",
    "worker.commands.mcp",
    "worker.commands.ui",
)


@pytest.mark.parametrize("requester", REQUESTERS)
def test_requesters_ask_over_nats_only(requester: str) -> None:
    """A requester reaches the worker over NATS: it never imports what serves, replicates or
    stores (so checking an event or asking a question loads neither tantivy nor the index)."""
    assert _files(requester), requester
    bad = [
        f"{where} imports {name}"
        for where, name, _ in _imports(requester)
        if _within(name, "worker.serving", "worker.replica", "worker.store", "worker.tools")
        # the requester packages are below the commands that drive them
        or (not requester.startswith("worker.commands") and _within(name, "worker.commands"))
    ]
    assert bad == []


def _deferred_imports(path: Path) -> set[int]:
    """Line numbers of imports inside a function or under ``if TYPE_CHECKING:``."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        deferred = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or (
            isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        )
        if deferred:
            lines.update(
                inner.lineno
                for inner in ast.walk(node)
                if isinstance(inner, ast.Import | ast.ImportFrom)
            )
    return lines


def _project_module(name: str, names: tuple[str, ...], known: set[str]) -> list[str]:
    """The project modules an import names: ``from a.b import c`` is ``a.b.c`` when that is
    a module, else ``a.b`` (or its closest known ancestor)."""
    out = [f"{name}.{n}" for n in names if f"{name}.{n}" in known]
    if not out or len(out) < len(names):
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        if parts:
            out.append(".".join(parts))
    return out


def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


@functools.cache
def _graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Every project module's imports as edges, and the deferred ones among them.

    Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so an import
    reaches each package above its target too, except the importer's own packages, which
    Python has begun to import before the importer itself (a re-export in a package
    ``__init__`` is how a loop hides behind a plain-looking ``from a.b.c import x``)."""
    known = {_module_name(path) for package in ("worker", "contracts") for path in _files(package)}
    edges: dict[str, set[str]] = {module: set() for module in known}
    deferred: list[tuple[str, str, str]] = []
    for package in ("worker", "contracts"):
        for path in _files(package):
            module = _module_name(path)
            late = _deferred_imports(path)
            for where, name, names in _imports(module):
                if _module_name(ROOT / where.split(":")[0]) != module:
                    continue
                for target in _project_module(name, names, known):
                    if target == module:
                        continue
                    run = {target} | (_ancestors(target) & known) - _ancestors(module) - {module}
                    edges[module] |= run
                    if int(where.split(":")[1]) in late:
                        deferred.extend((where, module, reached) for reached in run)
    return edges, deferred


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges[todo.pop()]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_the_graph_models_package_inits() -> None:
    # ``from worker.serving.service import ...`` runs ``worker/serving/__init__`` first; a
    # module inside ``worker.serving`` has begun that already.
    edges, _ = _graph()
    assert {"worker.serving", "worker.serving.service"} <= edges["worker.worker"]
    assert "worker.store.sqlite" not in edges["worker.store.sqlite.search"]


def test_no_import_cycle() -> None:
    """No module reaches itself through imports: a loop works only while something else
    imports one of its modules first (``test_import_alone`` runs that for real)."""
    edges, _ = _graph()
    bad = sorted(
        f"{module} -> {target} -> ... -> {module}"
        for module, targets in edges.items()
        for target in targets
        if _reaches(edges, target, module)
    )
    assert bad == []


def test_no_deferred_import_hides_a_cycle() -> None:
    edges, deferred = _graph()
    assert len(deferred) > 10  # the walk sees the deferred imports at all
    bad = [
        f"{where}: {module} -> {target} -> ... -> {module}"
        for where, module, target in deferred
        if _reaches(edges, target, module)
    ]
    assert bad == []
