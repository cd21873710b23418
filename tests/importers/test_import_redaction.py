"""``import`` (and ``watch``, through the same ``pipeline.checked``) replace credentials
before publishing, whatever the format; ``--no-redact`` keeps the text as found."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from contracts.redaction import REDACTION_ON, RedactionSpec, generate
from contracts.subjects import Subjects
from tests._events import event
from worker.importers.run import Job, import_jobs
from worker.importers.summary import print_summary
from worker.transport.connection import NatsOptions


def _claude_code(path: Path, text: str) -> Path:
    def line(kind: str, uuid: str, parent: str | None) -> bytes:
        return orjson.dumps({
            "type": kind, "sessionId": "redact-1", "uuid": uuid, "parentUuid": parent,
            "cwd": "/home/dev/app", "timestamp": "2026-12-01T10:00:00Z",
            "message": {"role": kind, "content": text},
        })  # fmt: skip

    path.write_bytes(line("user", "u-1", None) + b"\n" + line("assistant", "u-2", "u-1") + b"\n")
    return path


def _events(path: Path, text: str) -> Path:
    path.write_bytes(
        event("ev-1", 1, "session/start", surface="system")
        + b"\n"
        + event("ev-1", 2, payload={"text": text})
        + b"\n"
    )
    return path


async def _dry_run(job: Job, *, redact: bool) -> tuple[bytes, str]:
    output = io.BytesIO()
    report = await import_jobs(
        [job], options=NatsOptions(url=None), subjects=Subjects(), dry_run=True,
        idle_s=float("inf"), output=output, redaction=REDACTION_ON if redact else None,
    )  # fmt: skip
    summary = io.StringIO()
    print_summary(report, summary)
    return output.getvalue(), summary.getvalue()


@pytest.mark.parametrize(
    ("fmt", "write"), [("claude-code", _claude_code), ("events", _events)], ids=["claude", "events"]
)
async def test_import_redacts_before_publishing(tmp_path: Path, fmt: str, write: object) -> None:
    gh = generate("ghp_<A:36>")
    pw = generate("<A:10>8<A:6>")
    text = f"export GITHUB_TOKEN={gh}\nDB_PASSWORD={pw}"
    path = write(tmp_path / "s.jsonl", text)  # type: ignore[operator]
    published, summary = await _dry_run(Job(fmt, [path]), redact=True)
    assert published  # the events are there
    assert gh.encode() not in published and pw.encode() not in published
    assert b"GITHUB_TOKEN=[redacted:github-token]" in published
    assert b"DB_PASSWORD=[redacted:password]" in published
    for line in published.splitlines():
        orjson.loads(line)  # still JSON
    assert "credentials redacted before publishing:" in summary and "github-token" in summary
    assert gh not in summary and pw not in summary

    raw, summary = await _dry_run(Job(fmt, [path]), redact=False)
    assert gh.encode() in raw and "credentials redacted" not in summary


async def test_import_applies_the_operators_rules(tmp_path: Path) -> None:
    internal = "ACME-" + generate("<C:20>")
    allowed = generate("ghp_<A:36>")
    path = _events(tmp_path / "s.jsonl", f"{internal} {allowed}")
    spec = RedactionSpec(extra=(("acme-key", r"ACME-[A-Z0-9]{20}"),), allow=(allowed,))
    output = io.BytesIO()
    await import_jobs(
        [Job("events", [path])], options=NatsOptions(url=None), subjects=Subjects(),
        dry_run=True, idle_s=float("inf"), output=output, redaction=spec,
    )  # fmt: skip
    assert f"[redacted:acme-key] {allowed}".encode() in output.getvalue()


@pytest.mark.parametrize("redact", [True, False], ids=["redacting", "no-redact"])
async def test_a_refused_records_reason_echoes_no_credential(tmp_path: Path, redact: bool) -> None:
    """A refused record's reason names the fields that are wrong, and a field's name can be
    a credential (a runtime that wrote ``{"GITHUB_TOKEN=ghp_...": 1}``): the invalid-record
    lines on stderr and the summary go through the rules, ``--no-redact`` or not, as the
    worker's dead-letter reasons do."""
    gh = generate("ghp_<A:36>")
    pw = generate("<A:10>8<A:6>")
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        event("ev-2", 1, "session/start", surface="system")
        + b"\n"
        + event("ev-2", 2, **{f"GITHUB_TOKEN={gh}": 1})
        + b"\n"
        + event("ev-2", 3, cites=[{"session_id": "ev-2", "seq": 1, f"DB_PASSWORD={pw}": 1}])
        + b"\n"
    )
    errors, summary = io.StringIO(), io.StringIO()
    report = await import_jobs(
        [Job("events", [path])], options=NatsOptions(url=None), subjects=Subjects(),
        dry_run=True, idle_s=float("inf"), errors=errors,
        redaction=REDACTION_ON if redact else None,
    )  # fmt: skip
    print_summary(report, summary)
    said = errors.getvalue() + summary.getvalue() + "".join(map(str, report.tally.problems))
    assert report.invalid == 2 and "Extra inputs" in said, said
    assert gh not in said and pw not in said, said
    assert "GITHUB_TOKEN=[redacted:github-token]" in errors.getvalue()
