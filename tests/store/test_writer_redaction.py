"""The writer redacts every payload string before anything is stored or indexed, in both
transports (a thread of this process, the child process), and not when told off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from contracts.redaction import RedactionSpec, generate
from tests._events import event
from tests._index import connect
from worker.store.files import schema
from worker.store.index.writer_process import open_index_writer
from worker.store.search.query import compile_query
from worker.store.search.search_reader import QueryBuilder, SearchIndexReader, scope_clauses, top
from worker.store.writer_protocol import IngestItem


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = connect(db)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def _search(db: Path, text: str) -> set[int]:
    reader = SearchIndexReader.open(db)
    assert reader is not None
    scope, _ = scope_clauses(as_of_seq=2**62)
    view = reader.view()
    query = QueryBuilder(compile_query(text), schema.workspace_token("/work/a"), view)
    return {c.event_id for c in top(view.searcher, query.all_words(scope), 1000)}


def _everything(db: Path) -> str:
    """Every text the index file and the search index directory hold, as one string."""
    parts = [db.read_bytes().decode("utf-8", "replace")]
    for path in db.parent.rglob("*"):
        if path.is_file() and path != db:
            parts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


@pytest.mark.parametrize("mode", ["thread", "process"])
async def test_credentials_never_reach_the_store_the_index_or_titles(
    tmp_path: Path, mode: str
) -> None:
    gh = generate("ghp_<A:36>")
    aws = generate("AKIA<U:16>")
    pw = generate("<A:12>4<A:7>")
    pem = generate(
        "-----BEGIN RSA PRIVATE KEY-----\n<B:64>\n<B:64>\n<B:20>==\n-----END RSA PRIVATE KEY-----"
    )
    bodies = [
        event("s", 1, "session/start", surface="system", payload={"cwd": "/work/a"}),
        event("s", 2, "message/user", payload={"text": f"use GITHUB_TOKEN={gh} please"}),
        event("s", 3, "session/title", surface="system", payload={"title": f"key {aws}"}),
        event(
            "s",
            4,
            "tool/result",
            surface="tool",
            payload={"call_id": "c1", "output": {"env": [f"DB_PASSWORD={pw}"], "pem": pem}},
        ),
    ]
    db = tmp_path / "index.sqlite"
    writer = await open_index_writer(db, mode=mode)
    try:
        result = await writer.apply(
            [IngestItem(stream_seq=i + 1, data=b) for i, b in enumerate(bodies)]
        )
        assert result.applied == 4 and not result.rejected
    finally:
        await writer.close()
    stored = _everything(db)
    for value in (gh, aws, pw, pem[40:80]):
        assert value not in stored
    raw = dict(_rows(db, "SELECT seq, event_json(doc) FROM events"))
    assert orjson.loads(raw[2])["payload"]["text"] == (
        "use GITHUB_TOKEN=[redacted:github-token] please"
    )
    assert orjson.loads(raw[4])["payload"]["output"] == {
        "env": ["DB_PASSWORD=[redacted:password]"],
        "pem": "[redacted:private-key]",
    }
    [(title,)] = _rows(db, "SELECT title FROM sessions")
    assert title == "key [redacted:aws-access-key-id]"
    # the words around a credential find it, and so does its kind
    assert _search(db, "GITHUB_TOKEN") and _search(db, "DB_PASSWORD")
    assert _search(db, "github token") and _search(db, "redacted")


async def test_off_keeps_the_text_as_published(tmp_path: Path) -> None:
    gh = generate("ghp_<A:36>")
    db = tmp_path / "index.sqlite"
    writer = await open_index_writer(db, mode="process", redaction=RedactionSpec(on=False))
    try:
        await writer.apply(
            [
                IngestItem(1, event("s", 1, "session/start", surface="system")),
                IngestItem(2, event("s", 2, payload={"text": f"t {gh}"})),
            ]
        )
    finally:
        await writer.close()
    assert gh in _rows(db, "SELECT event_json(doc) FROM events WHERE seq = 2")[0][0]


async def test_operator_rules_reach_the_child(tmp_path: Path) -> None:
    internal = "ACME-" + generate("<C:20>")
    allowed = generate("ghp_<A:36>")
    spec = RedactionSpec(extra=(("acme-key", r"ACME-[A-Z0-9]{20}"),), allow=(allowed,))
    db = tmp_path / "index.sqlite"
    writer = await open_index_writer(db, mode="process", redaction=spec)
    try:
        await writer.apply(
            [
                IngestItem(1, event("s", 1, "session/start", surface="system")),
                IngestItem(2, event("s", 2, payload={"text": f"{internal} {allowed}"})),
            ]
        )
    finally:
        await writer.close()
    [(raw,)] = _rows(db, "SELECT event_json(doc) FROM events WHERE seq = 2")
    assert orjson.loads(raw)["payload"]["text"] == f"[redacted:acme-key] {allowed}"


async def test_a_cwd_that_looks_like_a_credential_keeps_its_workspace(tmp_path: Path) -> None:
    from contracts.partitions import workspace_key
    from contracts.subjects import Subjects

    cwd = "/home/dev/" + generate("ghp_<A:36>")
    subjects = Subjects()
    start = event("s", 1, "session/start", surface="system", payload={"cwd": cwd})
    db = tmp_path / "index.sqlite"
    writer = await open_index_writer(db, mode="thread")
    try:
        result = await writer.apply(
            [IngestItem(1, start, subject=subjects.events(workspace_key(cwd), "s"))]
        )
    finally:
        await writer.close()
    assert result.applied == 1 and not result.rejected
    assert _rows(db, "SELECT cwd FROM sessions") == [(cwd,)]
