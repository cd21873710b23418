"""Where every byte of a store and its search index is (issue 41): the breakdown behind
``bench.archive``'s disk figures.

- **The store** (SQLite): pages per table and index (the ``dbstat`` virtual table), the
  ``events`` rows' columns (the compressed ``doc`` against the ids, keys and numbers beside
  it), and the zstd ratio per event type (the JSON's bytes against its ``doc``).
- **The search index** (tantivy): bytes per file kind (``.idx`` postings, ``.pos``
  positions, ``.term`` term dictionary, ``.store``, ``.fast`` fast fields, ``.fieldnorm``),
  and per field: a sample of the store's events indexed again once per field, each index
  holding that field alone (the per-field sizes of the sample, scaled to the whole index).

``python -m bench.disk_breakdown --db HOME/index.sqlite [--sample 40000]`` (a home that
``python -m bench.archive --keep DIR`` kept: ``DIR/home/index.sqlite``).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Final

import tantivy

from worker.store import tables
from worker.store.database import Database
from worker.store.search import search_schema

MB: Final = 1e6
# The file kinds of a tantivy segment, by extension.
INDEX_KINDS: Final = ("idx", "pos", "term", "store", "fast", "fieldnorm")


def store_pages(db: Path) -> list[tuple[str, int, int, int]]:
    """(name, bytes of pages, bytes unused in them, overflow pages) per table and index,
    largest first."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found = conn.execute(
            "SELECT name, SUM(pgsize), SUM(unused), SUM(pagetype = 'overflow')"
            " FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    return [(str(name), int(size), int(unused), int(over)) for name, size, unused, over in found]


def _int_bytes(column: str) -> str:
    """The bytes SQLite's record format gives an integer column's value."""
    return (
        f"(CASE WHEN {column} BETWEEN -128 AND 127 THEN 1"
        f" WHEN {column} BETWEEN -32768 AND 32767 THEN 2"
        f" WHEN {column} BETWEEN -8388608 AND 8388607 THEN 3"
        f" WHEN {column} BETWEEN -2147483648 AND 2147483647 THEN 4"
        f" WHEN {column} BETWEEN -140737488355328 AND 140737488355327 THEN 6 ELSE 8 END)"
    )


# The events rows' columns: their bytes as SQLite records hold them (text and blob by
# length; integers by their record size; the rowid, the record headers and the cells'
# pointers besides).
_COLUMN_BYTES: Final = f"""
SELECT count(*) AS n,
       sum(length(doc)) AS doc,
       sum(length(session_id)) AS session_id,
       sum(length(event_id)) AS event_id,
       sum(length(type)) AS type,
       sum(length(surface)) AS surface,
       sum(CASE WHEN preview_key IS NULL THEN 0 ELSE 8 END) AS preview_key,
       sum({_int_bytes("seq")} + {_int_bytes("time_ms")} + {_int_bytes("stream_seq")}) AS numbers
FROM events
"""

_PER_TYPE: Final = """
SELECT type AS type, count(*) AS n, sum(length(CAST(event_json(doc) AS BLOB))) AS raw,
       sum(length(doc)) AS doc, sum(substr(doc, 1, 4) <> x'28b52ffd') AS split
FROM events GROUP BY type ORDER BY 3 DESC
"""


def event_columns(conn: Database) -> dict[str, int]:
    found, at = conn.rows(_COLUMN_BYTES)
    row = found[0]
    return {name: int(row[at[name]] or 0) for name in at}


def per_type(conn: Database) -> list[tuple[str, int, int, int, int]]:
    found, at = conn.rows(_PER_TYPE)
    return [
        (
            str(r[at["type"]]),
            int(r[at["n"]]),
            int(r[at["raw"]]),
            int(r[at["doc"]]),
            int(r[at["split"]]),
        )
        for r in found
    ]


def index_files(path: Path) -> Counter[str]:
    """Bytes per file kind of the index directory (``meta.json`` and the like: "other")."""
    sizes: Counter[str] = Counter()
    for file in path.rglob("*"):
        if file.is_file():
            kind = file.suffix.lstrip(".")
            sizes[kind if kind in INDEX_KINDS else "other"] += file.stat().st_size
    return sizes


def _sample_docs(conn: Database, count: int, body_cap: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    after = 0
    while len(docs) < count:
        rows, at = conn.rows(
            tables.SEARCH_EVENTS_AFTER,
            {
                "after": after,
                "limit": min(2000, count - len(docs)),
                "prompts": tables.TITLE_PROMPTS,
            },
        )
        if not rows:
            break
        values = at.getter(tables.SEARCH_DOCUMENT_NAMES)
        for row in rows:
            docs.append(search_schema.event_document(values(row), body_cap).to_dict())
        after = int(rows[-1][at["id"]])
    return docs


def _index_of(docs: list[dict[str, Any]], fields: set[str] | None, where: Path) -> Counter[str]:
    where.mkdir(parents=True)
    index = search_schema.open_index(where)
    writer = index.writer(heap_size=64 * 2**20, num_threads=1)
    for doc in docs:
        kept = doc if fields is None else {k: v for k, v in doc.items() if k in fields}
        if kept:
            writer.add_document(tantivy.Document.from_dict(kept, search_schema.SCHEMA))
    writer.commit()
    writer.wait_merging_threads()
    return index_files(where)


def per_field(conn: Database, sample: int, body_cap: int) -> tuple[int, dict[str, Counter[str]]]:
    """(events sampled, bytes per file kind of an index of the sample holding each field
    alone; "*": all of them)."""
    docs = _sample_docs(conn, sample, body_cap)
    names = sorted({name for doc in docs for name in doc})
    out: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="sq-fields-") as tmp:
        out["*"] = _index_of(docs, None, Path(tmp) / "all")
        for name in names:
            out[name] = _index_of(docs, {name}, Path(tmp) / name)
    return len(docs), out


def _own(sizes: Counter[str]) -> int:
    return sum(sizes[k] for k in ("idx", "pos", "term", "fast"))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.disk_breakdown", description=__doc__)
    parser.add_argument("--db", type=Path, required=True, help="the store file")
    parser.add_argument("--sample", type=int, default=40_000, help="events indexed per field")
    args = parser.parse_args()
    db: Path = args.db

    parts = [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.is_file()]
    print(f"store {db} ({sum(p.stat().st_size for p in parts) / MB:,.1f} MB with its WAL)")
    pages = store_pages(db)
    total = sum(size for _, size, _, _ in pages)
    print(f"  pages (dbstat): {total / MB:,.1f} MB; name, MB, share, MB unused, overflow pages")
    for name, size, unused, over in pages:
        if size >= total / 1000:
            print(
                f"    {name:28} {size / MB:9,.2f} MB  {size / total:6.1%}"
                f"  {unused / MB:8,.2f} {over:9,}"
            )
    conn = Database.open(db, "read", role="bench")
    try:
        cols = event_columns(conn)
        n = cols.pop("n")
        print(f"  events: {n:,} rows; column bytes per row (record payload, about):")
        for name, size in cols.items():
            print(f"    {name:14} {size / MB:9,.2f} MB  {size / max(n, 1):8.1f} B/row")
        print("  zstd per type: events, JSON MB, doc MB, ratio, split (text+JSON frames)")
        raw_all = doc_all = 0
        for kind, count, raw, doc, split in per_type(conn):
            raw_all, doc_all = raw_all + raw, doc_all + doc
            ratio = raw / max(doc, 1)
            print(
                f"    {kind:16} {count:8,} {raw / MB:9,.1f} {doc / MB:8,.1f} {ratio:6.2f}x"
                f" {split:7,}"
            )
        ratio = raw_all / max(doc_all, 1)
        print(f"    {'all':16} {n:8,} {raw_all / MB:9,.1f} {doc_all / MB:8,.1f} {ratio:6.2f}x")

        path = search_schema.search_index_path(db)
        files = index_files(path)
        whole = sum(files.values())
        print(f"search index {path}: {whole / MB:,.1f} MB")
        for kind, size in files.most_common():
            print(f"    .{kind:10} {size / MB:9,.2f} MB  {size / whole:6.1%}")
        cap = conn.value(tables.META_VALUE, ("text_cap_bytes",)) or 65536
        if args.sample > 0:
            sampled, fields = per_field(conn, args.sample, int(cap) - 4)
            all_of = sum(fields["*"].values())
            scale = whole / max(all_of, 1)
            print(
                f"  per field: {sampled:,} events indexed once per field alone"
                f" ({all_of / MB:,.1f} MB all together; scaled x{scale:.2f} to the whole index)"
            )
            # A field's own bytes: its postings, positions, terms and fast column. Every
            # index of the sample has a document store and the norms of every text field
            # (the "*" row's): they are the whole index's, not one field's.
            print(
                f"    {'field':10}"
                + "".join(f" {k:>9}" for k in INDEX_KINDS)
                + "   own MB (scaled)"
            )
            for name, sizes in sorted(fields.items(), key=lambda kv: -_own(kv[1])):
                row = "".join(f" {sizes[k] / MB:9.2f}" for k in INDEX_KINDS)
                own = sum(sizes.values()) if name == "*" else _own(sizes)
                print(f"    {name:10}{row}   {own * scale / MB:8.2f}")
    finally:
        conn.close()


if __name__ == "__main__":
    main()
