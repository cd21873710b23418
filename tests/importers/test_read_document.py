"""``source_reading.read_document``: the one reader of whole JSON documents the importers
of whole sources share, telling a literal ``null`` from a file that could not be read."""

from __future__ import annotations

from pathlib import Path

from worker.importers.source_reading import Document, SourceReading, read_document


def test_a_literal_null_is_a_document_not_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_bytes(b"null")
    reading = SourceReading()
    assert read_document(path, reading) == Document(None)
    assert not reading.problems


def test_a_half_written_file_is_none_and_said(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_bytes(b'{"history": [')
    reading = SourceReading()
    assert read_document(path, reading) is None
    [problem] = reading.problems
    assert problem.path == str(path) and problem.message.startswith("not readable JSON: ")


def test_a_missing_file_is_said_unless_optional(tmp_path: Path) -> None:
    reading = SourceReading()
    assert read_document(tmp_path / "gone.json", reading) is None
    assert [p.message for p in reading.problems] == ["missing"]
    quiet = SourceReading()
    assert read_document(tmp_path / "gone.json", quiet, optional=True) is None
    assert not quiet.problems


def test_a_folder_is_unreadable_not_missing(tmp_path: Path) -> None:
    reading = SourceReading()
    assert read_document(tmp_path, reading) is None
    assert reading.problems[0].message.startswith("not readable JSON: ")


def test_a_document_keeps_its_value(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_bytes(b'{"messages": [], "trajectory_format": "mini-swe-agent-1"}')
    document = read_document(path, SourceReading())
    assert document is not None and document.value["messages"] == []
