"""``sessionquery demo`` end to end, as a subprocess: all five tools answer and print."""

from __future__ import annotations

import os
import subprocess
import sys

from contracts.subjects import TOOL_NAMES
from worker.runtime.sample_corpus import PAY_CHILD, PAY_GRANDCHILD, PAY_ROOT, WEB_CHILD, WEB_ROOT


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
