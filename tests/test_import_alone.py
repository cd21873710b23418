"""Every module of ``worker`` and ``contracts`` imports first, alone, in a fresh interpreter.

An import cycle between modules works while something else happens to import one of its
modules first, and breaks the day an entry point (a command, a test run alone, another
runtime importing ``contracts``) imports a different one first. The static walk in
``test_layering`` finds the loops it can model; this runs the real thing: one process per
module, a few at a time, each bounded in time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Few processes: the suite's own workers share the machine's cores with these.
_POOL = max(1, min(4, (os.cpu_count() or 1)))
# One import, tantivy and the NATS client included, takes well under a second.
_TIMEOUT_S = 60.0


def _modules() -> list[str]:
    names = []
    for package in ("worker", "contracts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _import_alone(module: str) -> str | None:
    """None when ``module`` imports first in a fresh interpreter, else why not."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", f"import {module}"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{module}: no answer in {_TIMEOUT_S:.0f} s"
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return f"{module}: {last}"


def test_the_walk_finds_the_modules() -> None:
    modules = _modules()
    assert len(modules) > 150
    assert {"worker.store.search.search_ops", "worker.store.sqlite", "contracts"} <= set(modules)


def test_every_module_imports_first_alone() -> None:
    with ThreadPoolExecutor(_POOL) as pool:
        failed = [why for why in pool.map(_import_alone, _modules()) if why is not None]
    assert failed == []
