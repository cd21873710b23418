"""SQLite has one chokepoint: ``worker.store.database``. Read from the source with ``ast``
(a call inside a function counts too), over every module of ``worker`` but the importers:

- ``sqlite3.connect`` appears in the Database module only;
- no other module runs a statement on a connection of its own: no ``executemany``,
  ``executescript``, ``fetchone``/``fetchall``, and no ``.execute`` of SQL text.

The importers are left out: they read other agents' databases, never the index, through
their own read-only opener (``importers/readonly_db.py``), and as requesters they may not
import the store (``tests/test_layering.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import worker
import worker.store.database

WORKER = Path(worker.__file__).resolve().parent
DATABASE = Path(worker.store.database.__file__).resolve()
IMPORTERS = WORKER / "importers"
# What only a connection (or its cursor) is asked: statements and the rows they return.
CONNECTION_ONLY = frozenset({"executemany", "executescript", "fetchone", "fetchall"})


def _sql_sites(path: Path) -> list[str]:
    """Each place in ``path`` that opens a connection or runs SQL on one itself."""
    found: list[str] = []
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        where = f"{path.relative_to(WORKER.parent)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and node.module == "sqlite3":
            if any(alias.name == "connect" for alias in node.names):
                found.append(f"{where}: from sqlite3 import connect")
        elif isinstance(node, ast.Attribute) and node.attr == "connect":
            if isinstance(node.value, ast.Name) and node.value.id == "sqlite3":
                found.append(f"{where}: sqlite3.connect")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in CONNECTION_ONLY:
                found.append(f"{where}: .{method}()")
            elif method == "execute" and node.args and _is_text(node.args[0]):
                found.append(f"{where}: .execute() of SQL text")
    return found


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def test_only_the_database_module_opens_sqlite_or_runs_sql() -> None:
    outside = [
        site
        for path in sorted(WORKER.rglob("*.py"))
        if path.resolve() != DATABASE and IMPORTERS not in path.resolve().parents
        for site in _sql_sites(path)
    ]
    assert outside == [], "SQLite reached around worker.store.database:\n" + "\n".join(outside)


def test_the_scan_finds_what_the_database_module_does() -> None:
    # The rule above is only worth its empty list if the scan sees these sites at all.
    sites = " ".join(_sql_sites(DATABASE))
    assert "sqlite3.connect" in sites
    assert ".executemany()" in sites and ".executescript()" in sites
    assert ".fetchone()" in sites and ".fetchall()" in sites
