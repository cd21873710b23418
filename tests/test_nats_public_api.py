"""worker/ and contracts/ use nats-py's public API only.

The private names are taken from the installed nats-py itself at test time (every
``_name`` its classes define or assign on ``self``), so the list stays true across
releases; any ``something._name`` in our code with such a name, on anything but our own
``self``/``cls``, fails this test.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from functools import cache
from pathlib import Path

import nats

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("worker", "contracts")
OWN = {"self", "cls"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@cache
def nats_private_names() -> frozenset[str]:
    """Every private attribute name nats-py's classes have: class members (``dir``) and
    attributes their methods assign on ``self``."""
    names: set[str] = set()
    for info in pkgutil.walk_packages(nats.__path__, prefix="nats."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue  # an optional part (e.g. a missing extra)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                names.update(n for n in dir(value) if _private(n))
        source = getattr(module, "__file__", None)
        if source and source.endswith(".py"):
            tree = ast.parse(Path(source).read_text(encoding="utf-8"))
            names.update(
                node.attr
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and _private(node.attr)
            )
    return frozenset(names)


def touched(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of each nats-py private name read or written on a foreign object."""
    private = nats_private_names()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id in OWN):
                found.append((node.lineno, node.attr))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            found.append((node.lineno, str(node.args[1].value)))
    return found


def test_the_private_names_come_from_nats_py() -> None:
    names = nats_private_names()
    # The fields this code once reached into are all known to the scan.
    for name in ("_error_cb", "_msg", "_endpoints", "_subscription", "_jsm", "_prefix"):
        assert name in names, name
    assert "_pending_msgs_limit" in names and "_pending_bytes_limit" in names


def test_the_scan_catches_a_private_field() -> None:
    snippet = "nc._error_cb = handler\nx = request._msg\ngetattr(js, '_jsm')\nself._x = 1\n"
    assert [attr for _, attr in touched(snippet)] == ["_error_cb", "_msg", "_jsm"]


def test_worker_and_contracts_touch_no_nats_private_field() -> None:
    offenders = []
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, attr in touched(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {attr}")
    assert offenders == []
