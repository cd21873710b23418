"""``sessionquery demo`` end to end, as a subprocess: all five tools answer and print."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from contracts.events import SessionEvent
from contracts.subjects import TOOL_NAMES
from worker.commands.sample_corpus import PAY_CHILD, PAY_GRANDCHILD, PAY_ROOT, WEB_CHILD, WEB_ROOT


def test_demo_prints_each_tools_result_and_exits_0() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "SESSIONQUERY_"))}
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard only
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    headers = [line for line in out.splitlines() if line.startswith("=== ")]
    assert [h.split()[1] for h in headers] == list(TOOL_NAMES)
    sections = dict(zip(TOOL_NAMES, out.split("\n=== ")[1:], strict=True))
    assert PAY_ROOT in sections["session_search"]
    assert "AssertionError" in sections["session_event_search"]
    assert PAY_ROOT in sections["session_trace"] and PAY_GRANDCHILD in sections["session_trace"]
    assert PAY_CHILD in sections["session_event_trace"]  # cited by the child
    assert "compaction" in sections["session_event_trace"]  # replaced by the compaction
    assert "Exact event JSON" in sections["session_event_read"]
    assert "SESSION_QUERY_" not in out
    # The other workspace never appears to a payments caller.
    assert WEB_ROOT not in out and WEB_CHILD not in out


def test_sample_corpus_is_valid_and_has_the_shapes_the_demo_shows(tmp_path: Path) -> None:
    from worker.commands import sample_corpus as sample

    path = tmp_path / "sample.jsonl"
    count = sample.write_jsonl(path)
    events = [SessionEvent.model_validate_json(line) for line in path.read_bytes().splitlines()]
    assert len(events) == count == len(sample.sample_events())
    assert sample.sample_events() == sample.sample_events()  # deterministic
    by_key = {(e.session_id, e.seq): e for e in events}
    cwd = {e.session_id: e.payload["cwd"] for e in events if e.type == "session/start"}
    parent = {
        e.session_id: e.payload.get("parent_session_id")
        for e in events
        if e.type == "session/start"
    }
    assert set(cwd.values()) == {sample.PAYMENTS, sample.WEBSITE}
    # Lineage: root -> child -> grandchild, and a sibling of the child.
    assert parent[sample.PAY_GRANDCHILD] == sample.PAY_CHILD
    assert parent[sample.PAY_CHILD] == sample.PAY_ROOT
    assert parent[sample.PAY_SIBLING] == sample.PAY_ROOT and parent[sample.PAY_ROOT] is None
    # Seqs contiguous per session; every cite resolves inside the same workspace.
    for session_id in cwd:
        seqs = [e.seq for e in events if e.session_id == session_id]
        assert seqs == list(range(1, len(seqs) + 1))
    cites = [(e, c) for e in events for c in e.cites]
    assert len(cites) >= 3
    for event, cite in cites:
        assert (cite.session_id, cite.seq) in by_key
        assert cwd[cite.session_id] == cwd[event.session_id]
        assert cite.session_id != event.session_id
    compactions = [e for e in events if e.type == "compaction"]
    assert compactions and all(r < c.seq for c in compactions for r in c.replaces)
    # The demo caller is live (no session/end) with a current step.
    assert not any(e.session_id == sample.DEMO_CALLER and e.type == "session/end" for e in events)
