"""Drift is loud: skipped kinds told apart (by design, with a reason, or unknown), and the
texts that show them (the import summary, ``--dry-run``'s per-file table)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import orjson
import pytest

from contracts.subjects import Subjects
from worker.importers import registry, skips
from worker.importers.base import Problem, Tally
from worker.importers.figures import FileReport, FormatFigures, unrecognised_source
from worker.importers.pipeline import convert_file
from worker.importers.run import AgentReport, ImportReport, Job, import_jobs
from worker.importers.summary import print_files, print_summary
from worker.transport.connection import NatsOptions

HINT = "this agent version may have changed its format; please report"
SECRET = "the launch code is 0000"  # message text: never in a summary


def claude_line(kind: str, uuid: str, text: str = SECRET, **extra: object) -> bytes:
    return orjson.dumps({
        "type": kind, "sessionId": "drift-1", "uuid": uuid, "parentUuid": None,
        "cwd": "/home/dev/drift", "timestamp": "2026-12-01T10:00:00Z",
        "message": {"role": kind, "content": text}, **extra,
    })  # fmt: skip


def transcript(path: Path, *, new_kinds: int = 1) -> Path:
    lines = [
        claude_line("user", "u-1"),
        orjson.dumps({"type": "file-history-snapshot", "messageId": "m-1", "snapshot": {}}),
        *(orjson.dumps({"type": "hologram", "n": n}) for n in range(new_kinds)),
        claude_line("assistant", "u-2", parentUuid="u-1"),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_a_skip_with_a_reason_is_by_design_and_one_without_is_unknown() -> None:
    tally = Tally()
    tally.skip("record:hologram")
    tally.skip("record:hologram")
    tally.skip("record:bookkeeping", why="known bookkeeping")
    assert tally.unknown == {"record:hologram": 2}
    assert tally.by_design == {"record:bookkeeping": 1}
    assert tally.skipped == {"record:hologram": 2, "record:bookkeeping": 1}


def test_a_format_table_explains_its_kinds_exactly_or_by_pattern() -> None:
    tally = Tally()
    for what in ("record:summary:no-leaf", "record:file-history-snapshot", "record:hologram"):
        tally.skip(what)
    tally.explain(registry.get("claude-code").skip_reason)
    assert tally.unknown == {"record:hologram": 1}
    assert set(tally.by_design) == {"record:summary:no-leaf", "record:file-history-snapshot"}
    assert tally.why["record:file-history-snapshot"].startswith("backups of the files")
    # Another format's table does not know Claude Code's bookkeeping.
    other = Tally()
    other.skip("record:file-history-snapshot")
    other.explain(registry.get("codex").skip_reason)
    assert other.unknown == {"record:file-history-snapshot": 1}


def test_a_merge_keeps_a_kind_unknown_when_any_format_does_not_know_it() -> None:
    known, unknown = Tally(), Tally()
    known.skip("record:x", why="bookkeeping here")
    unknown.skip("record:x")
    for first, second in ((known, unknown), (unknown, known)):
        total = Tally()
        total.merge(first)
        total.merge(second)
        assert total.unknown == {"record:x": 2}, (first, second)
    alone = Tally()
    alone.merge(known)
    assert alone.by_design == {"record:x": 1} and alone.why == {"record:x": "bookkeeping here"}


def test_every_built_in_table_is_a_registered_format_and_a_plug_in_may_add_its_own() -> None:
    assert set(skips.BUILT_IN) <= set(registry.names())
    chatlog = registry.get("claude-code").__class__
    plugin = type("Own", (chatlog,), {"name": "own", "skipped_by_design": {"row:ping*": "pings"}})
    assert plugin().skip_reason("row:ping-3") == "pings"
    assert plugin().skip_reason("row:pong") is None


def test_claude_code_bookkeeping_is_by_design_and_a_new_kind_is_unknown(tmp_path: Path) -> None:
    _, tally = convert_file("claude-code", transcript(tmp_path / "s.jsonl", new_kinds=2))
    tally.explain(registry.get("claude-code").skip_reason)
    assert tally.unknown == {"record:hologram": 2}
    assert tally.by_design == {"record:file-history-snapshot": 1}


def test_a_source_of_another_shape_is_not_recognised_and_bookkeeping_alone_is(
    tmp_path: Path,
) -> None:
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_bytes(b'{"who": "a", "said": "x"}\n{"who": "b"}\n{"who": "c"}\n')
    _, tally = convert_file("claude-code", foreign)
    tally.explain(registry.get("claude-code").skip_reason)
    assert unrecognised_source(tally, "claude-code") == (
        "not a recognised claude-code source (no record of a known kind in 3 records)"
    )
    only_snapshots = tmp_path / "snap.jsonl"
    only_snapshots.write_bytes(b'{"type": "file-history-snapshot"}\n')
    _, known = convert_file("claude-code", only_snapshots)
    known.explain(registry.get("claude-code").skip_reason)
    assert unrecognised_source(known, "claude-code") is None
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert unrecognised_source(convert_file("claude-code", empty)[1], "claude-code") is None
    garbage = Tally(lines=2, problems=[Problem("g", 1, "invalid JSON"), Problem("g", 2, "x")])
    assert "in 2 records" in (unrecognised_source(garbage, "events") or "")


def test_the_per_file_block_says_counts_and_kinds_only() -> None:
    tally = Tally(lines=9)
    tally.skip("record:file-history-snapshot", why="backups")
    tally.skip("record:zeta")
    tally.skip("record:alpha")
    tally.skip("record:alpha")
    tally.problems.append(Problem("/x/s.jsonl", 4, "invalid JSON"))
    read = FileReport(
        Path("/x/s.jsonl"), "claude-code", sessions=2,
        events=Counter({"tool/call": 1, "message/user": 3, "session/start": 2}), tally=tally,
        refused=1, reasons=["gap in session a: expected seq 3, got 5"], looked_up=1,
    )  # fmt: skip
    assert read.lines() == [
        "/x/s.jsonl (claude-code)",
        "  sessions 2, events 6: message/user 3, session/start 2, tool/call 1",
        "  skipped by design: record:file-history-snapshot 1 (backups)",
        f"  unknown record kinds: record:alpha 2, record:zeta 1 — {HINT}",
        "  invalid records: 1 (said on stderr)",
        "  would be refused: 1",
        "    gap in session a: expected seq 3, got 5",
        "  would be looked up in the stream: 1 sessions (their session/start is not in the"
        " files read)",
    ]


def test_the_summary_labels_unknown_kinds_per_agent_and_in_total() -> None:
    report = ImportReport(published=7, files=1)
    report.tally.skip("record:file-history-snapshot", why="backups")
    report.tally.skip("record:hologram")
    report.agents.append(AgentReport(
        "claude-code", (Path("/home/me/.claude/projects"),), files=1, published=7,
        skipped=(("record:file-history-snapshot", 1), ("record:hologram", 1)),
        unknown=(("record:hologram", 1),),
    ))  # fmt: skip
    report.unrecognised.append("/x/b.jsonl: not a recognised claude-code source (…)")
    out = io.StringIO()
    print_summary(report, out)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(
        "skipped records: record:file-history-snapshot 1, record:hologram 1;"
        f" unknown record kinds: record:hologram 1 — {HINT}"
    )
    assert f"unknown record kinds: record:hologram 1 — {HINT}" in lines
    assert lines[-1] == "/x/b.jsonl: not a recognised claude-code source (…)"


def test_format_figures_add_up_files_for_status() -> None:
    figures = FormatFigures()
    for unknown in ("record:a", "record:b"):
        tally = Tally()
        tally.skip(unknown)
        tally.skip("kept", why="by design")
        figures.add(FileReport(Path(unknown), "f", sessions=1,
                               events=Counter({"session/start": 1, "message/user": 2}),
                               tally=tally))  # fmt: skip
    assert figures.line("f") == (
        f"f: 2 files, 2 sessions, 6 events; unknown record kinds: record:a 1, record:b 1 — {HINT}"
    )
    record = figures.record(command="import")
    assert (record["files"], record["sessions"], record["events"]) == (2, 2, 6)
    assert record["unknown"] == {"record:a": 1, "record:b": 1}
    assert record["skipped"] == {"kept": 2}
    assert record["last_import"].endswith("Z") and record["command"] == "import"


@pytest.mark.asyncio
async def test_a_dry_run_table_is_the_same_each_time_and_holds_no_message_text(
    tmp_path: Path,
) -> None:
    path = transcript(tmp_path / "s.jsonl")
    tables = []
    for _ in range(2):
        report = await import_jobs(
            [Job("claude-code", [path])], options=NatsOptions(url=None),
            subjects=Subjects(), dry_run=True, idle_s=float("inf"),
        )  # fmt: skip
        out = io.StringIO()
        print_files(report, out)
        tables.append(out.getvalue())
    assert tables[0] == tables[1]
    assert SECRET not in tables[0] and f"{path} (claude-code)" in tables[0]  # path, no text
    assert f"unknown record kinds: record:hologram 1 — {HINT}" in tables[0]


def test_a_summary_over_several_formats_has_a_line_per_format() -> None:
    report = ImportReport(published=3, files=2)
    report.formats["codex"] = FormatFigures(files=1, sessions=1, events=2)
    report.formats["claude-code"] = FormatFigures(
        files=1, sessions=1, events=1, unknown=Counter({"record:hologram": 1})
    )
    out = io.StringIO()
    print_summary(report, out)
    assert out.getvalue().splitlines()[:2] == [
        "claude-code: 1 files, 1 sessions, 1 events; unknown record kinds: record:hologram 1"
        f" — {HINT}",
        "codex: 1 files, 1 sessions, 2 events",
    ]


def test_a_stored_record_keeps_the_most_counted_kinds_each_cut() -> None:
    counts = Counter({f"record:{n:04d}": 1 for n in range(300)})
    counts["record:" + "x" * 500] = 5
    kept = skips.bounded(counts)
    assert len(kept) == skips.MAX_KINDS
    long_kind = "record:" + "x" * (skips.MAX_KIND_CHARS - 8) + "…"
    assert kept[long_kind] == 5 and len(long_kind) == skips.MAX_KIND_CHARS
    assert "record:0000" in kept and "record:0299" not in kept  # ties: in kind order
    assert list(kept) == sorted(kept)
