"""``sessionquery secrets``: per workspace and kind, how many credentials were redacted and
in which sessions; never a value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from contracts.redaction import generate
from tests._events import event
from worker.store.index.writer_process import open_index_writer
from worker.store.writer_protocol import IngestItem

REPO = Path(__file__).resolve().parents[2]


def _secrets(db: Path, *flags: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQUERY_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", "secrets", "--db", str(db), *flags],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout + done.stderr


async def test_counts_by_workspace_and_kind_never_a_value(tmp_path: Path) -> None:
    values = [generate("ghp_<A:36>") for _ in range(3)] + [generate("AKIA<U:16>")]
    bodies = [
        event("a1", 1, "session/start", surface="system", payload={"cwd": "/work/a"}),
        event("a1", 2, payload={"text": f"GITHUB_TOKEN={values[0]} and {values[3]}"}),
        event("a2", 1, "session/start", surface="system", payload={"cwd": "/work/a"}),
        event("a2", 2, payload={"text": f"{values[1]} {values[2]}"}),
        event("b1", 1, "session/start", surface="system", payload={"cwd": "/work/b"}),
        event("b1", 2, payload={"text": "nothing to hide"}),
    ]
    db = tmp_path / "index.sqlite"
    writer = await open_index_writer(db, mode="thread")
    try:
        await writer.apply([IngestItem(i + 1, b) for i, b in enumerate(bodies)])
    finally:
        await writer.close()
    doc = orjson.loads(_secrets(db, "--json"))
    assert doc == {
        "workspaces": [
            {
                "workspace": "/work/a",
                "kinds": [
                    {"kind": "aws-access-key-id", "redacted": 1, "sessions": ["a1"]},
                    {"kind": "github-token", "redacted": 3, "sessions": ["a1", "a2"]},
                ],
            }
        ]
    }
    text = _secrets(db)
    assert "/work/a: 4 redacted" in text and "github-token" in text and "a2" in text
    assert not [v for v in values if v in text]
