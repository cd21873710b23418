"""``sessionquery doctor``: ``status``'s report plus the full checks of the index file
(SQLite's ``integrity_check``, the search index's), each problem said with what to do."""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from worker.commands.status import (
    EXIT_OK,
    EXIT_PROBLEM,
    add_arguments,
    format_status,
    index_file_of,
    stream_report,
)
from worker.replica.continuity import history_note
from worker.store.files import schema
from worker.store.files.integrity import check_integrity

__all__ = ["add_arguments", "diagnose", "run"]


def run(args: argparse.Namespace) -> int:
    db = index_file_of(args)
    report = asyncio.run(stream_report(args, db))
    findings = diagnose(db, report)
    for line in format_status(report):
        print(line)
    print()
    if not findings:
        print("doctor: no problem found (integrity_check, search index, stream match)")
        return EXIT_OK
    for finding in findings:
        print(f"problem: {finding}")
    return EXIT_PROBLEM


def diagnose(db: Path, report: dict[str, Any]) -> list[str]:
    """Plain-words problems with the remedy, from the full checks."""
    findings: list[str] = []
    if report.get("index_source") == "worker":
        return [
            f"no index at {db} on this machine; worker {report['index_worker']} serves its own"
            " (reported above): run doctor with its --db or --home on its host for the full"
            " checks"
        ]
    if not db.exists():
        return [f"no index at {db}: start the worker (it builds one from the stream)"]
    if report.get("workers") and not report.get("served_by"):
        findings.append(
            f"no serving worker uses {db} (their index ids are listed above): it may be left"
            " from another --home; run doctor with the serving worker's --db or --home"
        )
    try:
        version = schema.version_action(int(report.get("schema_version") or 0), str(db))
    except schema.SchemaVersionError as exc:
        return [str(exc)]
    if version == "rebuild":
        findings.append(
            f"schema version {report.get('schema_version')} has no migration: the worker"
            " rebuilds the index from the stream at its next start"
        )
    try:
        problems = check_integrity(db)
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    if problems:
        findings.append(
            f"index {db} is corrupt ({'; '.join(problems[:3])}): stop the worker and start it"
            " again; it moves the file aside and rebuilds it from the stream when the stream"
            " holds the whole history, else restore the file from a backup"
        )
    if "divergence" in report:
        findings.append(
            f"{report['divergence']}: the worker rebuilds the index at its next start"
            " (or refuses with --on-divergence refuse)"
        )
    if report.get("history_unavailable_before"):
        findings.append(
            f"{history_note(report['history_unavailable_before'])}: events before it were"
            " gone from the stream when the index was built; sessions that started earlier"
            " are dead-lettered as unknown"
        )
    return findings
