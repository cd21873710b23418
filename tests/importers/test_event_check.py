"""The event contract's check is one function (``contracts.events.validate_event``): a
publisher runs it without loading the index, and it refuses with the writer's words."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.events import Refusal, SessionEvent, validate_event
from tests._events import event, event_dict
from worker.store.index.batch import BatchChecker
from worker.store.writer_protocol import IngestItem, Rejected

ROOT = Path(__file__).resolve().parents[2]


def _citing(seq: int) -> bytes:
    """A session/start citing ``seq``: the standard library writes integers orjson cannot."""
    body = event_dict("s-1", 1, "session/start", cites=[{"session_id": "s", "seq": seq}])
    return json.dumps(body).encode()


# Runs the importers' two checks (a converter's output, and our own format's lines) on a
# good event and a bad one, then names the modules that must not have been loaded.
_FRESH_CHECK = """
import sys
from pathlib import Path
from worker.importers.base import Outgoing, Tally
from worker.importers.events import EventsConverter
from worker.importers.pipeline import checked

GOOD = b'{"session_id": "s-1", "seq": 1, "event_id": "e-1", "type": "session/start",' \\
    b' "surface": "system", "time": "2026-12-02T09:00:00Z", "payload": {"cwd": "/w"}}'
BAD = GOOD.replace(b'"seq": 1', b'"seq": 0')

class Source:
    validated = False
    tally = Tally()

source = Source()
kept = checked(source, [Outgoing("s-1", 1, GOOD), Outgoing("s-1", 0, BAD)], "f", 1, 1 << 20)
assert [out.body for out in kept] == [GOOD], kept
assert len(source.tally.problems) == 1, source.tally.problems
ours = EventsConverter(Path("f"), max_event_bytes=1 << 20)
assert len(ours.feed(1, GOOD)) == 1 and ours.feed(2, BAD) == []
assert len(ours.tally.problems) == 1, ours.tally.problems
print(" ".join(sorted(m for m in sys.modules if m == "tantivy" or m.startswith("worker.store"))))
"""


def test_the_importers_check_events_without_loading_the_index() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _FRESH_CHECK],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [], f"loaded by the event check: {run.stdout}"


@pytest.mark.parametrize(
    "body",
    [
        b"x" * 2049,
        b'{"session_id": ',
        b"\xff\xfe",
        b"[1]",
        event("s-1", 1, "session/start", seq="1"),
        event("s-1", 1, "session/start", surface="robot"),
        event("s-1", 1, "session/start", extra=1),
        event("s-1", 2, replaces=[2]),
        event("s-1", 1, "session/start", payload={"cwd": 5}),
        event("s-1", 1, "session/start", payload={"parent_session_id": "a/b"}),
        event("s-1", 2, "session/title", payload={"title": ["x"]}),
        _citing(2**70),
    ],
)
def test_a_publisher_and_the_writer_refuse_in_the_same_words(body: bytes) -> None:
    refusal = validate_event(body, max_event_bytes=2048)
    assert isinstance(refusal, Refusal)
    checker = BatchChecker(text_cap_bytes=1024, max_event_bytes=2048)
    [rejected] = checker.prepare([IngestItem(stream_seq=1, data=body)]).items
    assert isinstance(rejected, Rejected)
    assert rejected.reason == refusal.reason


def test_a_valid_event_comes_back_as_the_model() -> None:
    body = event("s-1", 1, "session/start")
    checked = validate_event(body)
    assert isinstance(checked, SessionEvent)
    assert (checked.session_id, checked.seq, checked.type) == ("s-1", 1, "session/start")


def test_the_cited_seq_must_fit_the_index() -> None:
    refusal = validate_event(_citing(2**63))
    assert refusal == Refusal(f"contract violation: cites seq {2**63} out of range")


def _documented_reasons() -> list[list[str]]:
    """docs/protocol.md's table of per-message checks: each row's reasons, as written."""
    text = (ROOT / "docs" / "protocol.md").read_text()
    table = text.split("**Checking an event before publishing.**", 1)[1].split("\n\n")[1]
    rows = [line for line in table.splitlines() if line.startswith("| ")][2:]  # past the header
    return [re.findall(r"`([^`]+)`", row.split(" | ", 1)[1]) for row in rows]


def _pattern(documented: str) -> re.Pattern[str]:
    """A documented reason as a pattern: N, M, P, S stand for numbers, <...> for text."""
    parts = re.split(r"(<[^>]+>|\b[NMPS]\b)", documented)
    return re.compile(
        "".join(
            ".+" if p.startswith("<") else r"\d+" if p in "NMPS" and p else re.escape(p)
            for p in parts
        )
    )


def test_docs_protocol_names_every_reason_the_check_gives() -> None:
    rows = _documented_reasons()
    assert len(rows) == 9, rows
    bodies = [
        b"x" * 2049,
        b"\xff\xfe",
        b'{"a":',
        event("s-1", 1, "session/start", surface="robot"),
        _citing(2**63),
        event("s-1", 2, replaces=[2]),
        event("s-1", 1, "session/start", payload={"cwd": 5}),
        event("s-1", 1, "session/start", payload={"parent_session_id": "a/b"}),
        event("s-1", 2, "session/title", payload={"title": ["x"]}),
    ]
    for body, documented in zip(bodies, rows, strict=True):
        refusal = validate_event(body, max_event_bytes=2048)
        assert isinstance(refusal, Refusal)
        assert _pattern(documented[0]).fullmatch(refusal.reason), (documented, refusal)
