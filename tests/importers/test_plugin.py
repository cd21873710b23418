"""The plug-in interface from the outside: the example importer of docs/importers.md,
installed the way an installed distribution is found (a ``.dist-info`` with its
``entry_points.txt`` on the path), run by the real ``import`` into a real nats-server and
worker, and read back through the tools."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers.test_import_tools import ask, import_args, indexed, sessionquery
from worker.importers import registry
from worker.worker import Worker

DOCS = Path(__file__).parents[2] / "docs" / "importers.md"
CWD = "/home/dev/chatlogs"
LOG_SESSION = "chat-espresso"
CALLER = "chat-descaling"  # a later session of the same workspace: who asks the tools
# Per log line: the session/start comes with the first; the "system" line is skipped.
LOG = [
    {"who": "user", "said": "why is the grinder clumping the beans", "at": "2025-03-01T08:00:00Z",
     "cwd": CWD},
    {"who": "bot", "said": "static: try a drop of water on the beans (Ross droplet)",
     "at": "2025-03-01T08:00:05Z", "cwd": CWD},
    {"who": "system", "said": "reconnected", "at": "2025-03-01T08:01:00Z", "cwd": CWD},
    {"who": "user", "said": "that fixed the clumping", "at": "2025-03-01T08:02:00Z", "cwd": CWD},
]  # fmt: skip


def example_source() -> str:
    """The docs' twenty-line example, as written there."""
    blocks = re.findall(r"```python\n(# chatlog_importer\.py\n.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) == 1, "docs/importers.md lost its example plug-in"
    return str(blocks[0])


def install_example(site: Path, module: str = "chatlog_importer", source: str = "") -> Path:
    """The example as an installed distribution on ``site``: what pip would leave there."""
    (site / f"{module}.py").write_text(source or example_source())
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    name = module.removesuffix("_importer")
    (info / "entry_points.txt").write_text(
        f"[{registry.GROUP}]\n{name} = {module}:ChatLogImporter\n"
    )
    return site


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site folder on this process's path, the registry read afresh around the test."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    registry.importers.cache_clear()
    yield site
    registry.importers.cache_clear()


def test_the_registry_finds_the_installed_example(on_path: Path) -> None:
    install_example(on_path)
    found = registry.importers()
    orders = [importer.detect_order for importer in found.values()]
    assert orders == sorted(orders) and next(iter(found)) == "events"  # detection order
    assert list(found)[-1] == "chatlog"  # a plug-in's default order: after the built-ins
    assert found["chatlog"].help.startswith("chat logs")
    log = on_path / "log.jsonl"
    log.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in LOG))
    from worker.importers.detect import detect
    from worker.importers.pipeline import convert_file

    assert detect(log) == "chatlog"
    events, tally = convert_file("chatlog", log)
    assert [orjson.loads(e.body)["type"] for e in events] == [
        "session/start", "message/user", "message/assistant", "message/user",
    ]  # fmt: skip
    assert tally.skipped == {"record:system": 1}


def test_a_broken_plugin_is_left_out_and_named(
    on_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_example(on_path, "broken_importer", source="raise RuntimeError('secret-ish text')\n")
    found = registry.importers()
    assert "broken" not in found and "claude-code" in found
    err = capsys.readouterr().err
    assert "plug-in 'broken' not loaded (RuntimeError)" in err
    assert "secret-ish" not in err  # the class, never the plug-in's own error text


def test_a_plugin_cannot_take_a_built_in_name(
    on_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_example(on_path, "codex_importer")  # registers ChatLogImporter as "codex"
    assert registry.get("codex").help.startswith("OpenAI Codex")
    assert "plug-in 'codex' ignored: the name is taken" in capsys.readouterr().err


@pytest.fixture
async def imported(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> AsyncIterator[Worker]:
    site = tmp_path / "site"
    site.mkdir()
    install_example(site)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "espresso.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in LOG))
    later = {"who": "user", "said": "descale the boiler", "at": "2025-03-02T08:00:00Z", "cwd": CWD}
    (logs / "descaling.jsonl").write_bytes(orjson.dumps(later) + b"\n")
    paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    usage = await asyncio.to_thread(sessionquery, "import", "--help", env=env)
    assert re.search(r"chatlog\s+chat logs", usage.stdout), usage.stdout
    args = import_args(nats_url, subjects, logs, fmt="auto")
    first = await asyncio.to_thread(sessionquery, *args, env=env)
    assert first.returncode == 0, first.stderr
    assert "published 6 events (0 already in the stream)" in first.stderr
    assert "skipped records: record:system 1" in first.stderr
    again = await asyncio.to_thread(sessionquery, *args, env=env)
    assert "published 6 events (6 already in the stream)" in again.stderr, again.stderr
    assert (await nc.jetstream().stream_info(subjects.events_stream)).state.messages == 6
    async with indexed(nc, subjects, tmp_path, 6) as worker:
        yield worker


async def test_the_example_plugin_imports_end_to_end(nc: NATS, imported: Worker) -> None:
    found = await ask(nc, imported, "session_search", CALLER, query="grinder clumping")
    assert LOG_SESSION in found
    assert "why is the grinder clumping" in found  # the first prompt titles it
    trace = await ask(nc, imported, "session_trace", CALLER, session_id=LOG_SESSION)
    assert "⟦why is the grinder clumping the beans⟧ (first prompt)" in trace
    assert "created 2025-03-01T08:00:00.000Z · updated 2025-03-01T08:02:00.000Z" in trace
    read = await ask(nc, imported, "session_event_read", CALLER, session_id=LOG_SESSION, seq=3)
    assert "Ross droplet" in read


def test_the_built_ins_are_registered_as_entry_points_like_any_plugin() -> None:
    import tomllib

    project = tomllib.loads((DOCS.parents[1] / "pyproject.toml").read_text())["project"]
    assert project["entry-points"][registry.GROUP] == registry.BUILT_IN
