"""The exception tree: every exception class of ``worker`` and ``contracts`` descends from
one of the package roots and is named in the map (``worker.errors``), so a new class
outside the tree, or missing from the map, fails here."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import contracts
import worker
import worker.errors
from contracts.errors import SessionQueryClientError
from worker.failures import RuntimeFailure
from worker.importers.publish import ImportFailed
from worker.retry import RetryStopped
from worker.signals import ExecutionAborted
from worker.store.errors import StoreError
from worker.tools import ToolError

ROOTS: tuple[type[BaseException], ...] = (
    SessionQueryClientError,
    StoreError,
    ExecutionAborted,
    ToolError,
    RuntimeFailure,
    ImportFailed,
    RetryStopped,
)


def _modules(package: ModuleType) -> list[ModuleType]:
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        try:
            found.append(importlib.import_module(info.name))
        except ImportError:
            continue  # an optional extra that is not installed: its classes are not here
    return found


def _exception_classes() -> list[type[BaseException]]:
    classes: dict[str, type[BaseException]] = {}
    for module in [*_modules(worker), *_modules(contracts)]:
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                classes[f"{value.__module__}.{value.__qualname__}"] = value
    return list(classes.values())


def test_the_walk_finds_the_tree() -> None:
    # A guard on the guard: an empty walk would pass every rule below.
    found = set(_exception_classes())
    assert set(ROOTS) <= found
    assert len(found) >= 30


def test_every_exception_class_descends_from_one_root() -> None:
    outside = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _exception_classes()
        if not issubclass(cls, ROOTS)
    ]
    assert outside == []


def test_every_exception_class_is_named_in_the_map() -> None:
    doc = worker.errors.__doc__ or ""
    missing = [cls.__qualname__ for cls in _exception_classes() if cls.__qualname__ not in doc]
    assert missing == []
