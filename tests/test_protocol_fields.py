"""docs/protocol.md §7.1's table of payload fields against the code: every field a built-in
importer writes is documented for its event type, every documented field is written by an
importer or read by the worker, and the worker reads the fields the table says it reads.

The importers' side converts each format's generated history (the shapes read from the
agent's writer, ``tests/importers/gen_*``) and the hand-written fixtures as ``import``
does."""

from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path

import orjson
import pytest

from contracts.events import KNOWN_EVENT_TYPES
from tests.importers import gen_opencode
from tests.importers._corpus import AIDER_FILE, CLAUDE_DIR, CODEX_DIR, FIXTURES
from tests.importers.test_known_skips import WRITERS
from worker.importers.base import SpawnLinks
from worker.importers.detect import expand
from worker.importers.pipeline import convert_file
from worker.store.index.batch import BatchChecker, CheckedEvent
from worker.store.search.readable import readable
from worker.store.writer_protocol import IngestItem

ROOT = Path(__file__).resolve().parent.parent
# Every importer adds it to every payload (the agent's own name for the record).
EVERYWHERE = "source_type"


def _names(cell: str) -> set[str]:
    """The field names of a cell: its backquoted names outside parentheses (values and
    remarks stand inside them)."""
    return set(re.findall(r"`([A-Za-z_]+)`", re.sub(r"\([^)]*\)", "", cell)))


@functools.cache
def documented() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """type -> (fields the worker reads, fields the importers also write)."""
    text = (ROOT / "docs" / "protocol.md").read_text()
    block = text.split("<!-- payload-fields -->", 1)[1].split("<!-- /payload-fields -->", 1)[0]
    table: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for line in block.strip().splitlines()[2:]:
        kind, _surface, read, written = (c.strip() for c in line.strip().strip("|").split("|"))
        table[kind.strip("`")] = (frozenset(_names(read)), frozenset(_names(written)))
    return table


def _convert(fmt: str, root: Path, into: dict[str, set[str]]) -> None:
    links = SpawnLinks()
    for path in expand([root], fmt):
        outs, _ = convert_file(fmt, path, links=links)
        for out in outs:
            event = orjson.loads(out.body)
            into.setdefault(event["type"], set()).update(event.get("payload") or {})


@functools.cache
def written() -> dict[str, frozenset[str]]:
    """type -> every payload field some built-in importer writes for it."""
    found: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for fmt, write in WRITERS.items():
            (home / fmt).mkdir()
            _convert(fmt, write(home / fmt), found)
        (home / "opencode").mkdir()
        database = home / "opencode" / "opencode.db"
        gen_opencode.write_database(database, gen_opencode.corpus())
        _convert("opencode", database, found)
    for fmt, root in (
        ("claude-code", CLAUDE_DIR),
        ("claude-code", FIXTURES / "generated" / "claude-code"),
        ("codex", CODEX_DIR),
        ("codex", FIXTURES / "generated" / "codex"),
        ("aider", AIDER_FILE),
    ):
        _convert(fmt, root, found)
    return {kind: frozenset(fields) for kind, fields in found.items()}


def test_the_table_names_every_known_type() -> None:
    assert set(documented()) == set(KNOWN_EVENT_TYPES)
    assert documented()["compaction"][0] == {"summary"}


def test_every_field_an_importer_writes_is_documented() -> None:
    table = documented()
    missing = sorted(
        f"{kind}: {field}"
        for kind, fields in written().items()
        for field in fields - {EVERYWHERE}
        if kind not in table or field not in table[kind][0] | table[kind][1]
    )
    assert missing == []


def test_every_also_written_field_is_written() -> None:
    produced = written()
    stale = sorted(
        f"{kind}: {field}"
        for kind, (_, also) in documented().items()
        for field in also - produced.get(kind, frozenset())
    )
    assert stale == []


_MARK = "marker-value-42"


def _checked(kind: str, field: str) -> CheckedEvent:
    event = {
        "session_id": "s-fields",
        "seq": 1 if kind == "session/start" else 2,
        "event_id": "e-fields",
        "type": kind,
        "surface": "system",
        "time": "2026-12-01T10:00:00Z",
        "payload": {field: _MARK},
    }
    [parsed] = (
        BatchChecker(text_cap_bytes=65_536, max_event_bytes=1 << 20)
        .prepare([IngestItem(1, orjson.dumps(event))])
        .items
    )
    assert isinstance(parsed, CheckedEvent), parsed
    return parsed


def _read_by_the_worker(kind: str, field: str) -> bool:
    """The worker gives ``field`` of a ``kind`` event a meaning: it is the event's readable
    text or tool, or the writer keeps it (the workspace, the parent, the title, the prompt)."""
    raw = orjson.dumps({"type": kind, "payload": {field: _MARK}}).decode()
    _, tool, text = readable(raw)
    if _MARK in (tool, text):
        return True
    parsed = _checked(kind, field)
    return _MARK in (parsed.cwd, parsed.parent_session_id, parsed.title, parsed.prompt)


@pytest.mark.parametrize(
    ("kind", "field"),
    sorted((kind, field) for kind, (read, _) in documented().items() for field in read),
)
def test_the_worker_reads_what_the_table_says(kind: str, field: str) -> None:
    assert _read_by_the_worker(kind, field)


def test_a_field_the_worker_does_not_read_is_not_read() -> None:
    # The probe can fail: an "also written" field gives the event no text of its own.
    assert not _read_by_the_worker("compaction", "trigger")
    assert not _read_by_the_worker("tool/result", "call_id")
