"""Redaction bench: what the credential rules cost ingestion, and the detector's speed.

1. The corpus (``bench.corpus``) with a credential planted in one event in fifty (every
   rule's example in turn, generated at run time), encoded once.
2. Ingest through the index writer (the worker's, in its child process: checking,
   redaction, SQLite, the search index) with redaction on and off, alternately, twice each,
   on fresh files in the same run; the best run of each. No NATS here: the stream's share
   is the same either way, so leaving it out makes the ratio stricter, not looser.
3. The detector alone over every payload string of the corpus: MB/s.

Target: ingest with redaction ≤ 1.10× the time without.
``python -m bench.redaction --sessions 200 --events 250``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import orjson

from bench import corpus
from bench.report import Check, checks_of, format_table, result_dict, write_result

TARGET: Final = 1.10
PLANT_EVERY: Final = 50
BATCH: Final = 500


def planted_corpus(config: corpus.CorpusConfig) -> list[bytes]:
    """The corpus's events, one in ``PLANT_EVERY`` with a generated credential appended to
    its first string field (or in a field of its own)."""
    from contracts.redaction import RULES, generate

    out = []
    for n, event in enumerate(corpus.generate(config)):
        if n % PLANT_EVERY == PLANT_EVERY - 1:
            rule = RULES[(n // PLANT_EVERY) % len(RULES)]
            text = rule.example.before + generate(rule.example.secret) + rule.example.after
            payload = event["payload"]
            for key, value in payload.items():
                if isinstance(value, str) and key not in ("cwd", "parent_session_id"):
                    payload[key] = f"{value}\n{text}"
                    break
            else:  # no text field (a step marker): one more field holds it
                payload["note"] = text
        out.append(corpus.encode(event))
    return out


async def ingest_seconds(bodies: list[bytes], db: Path, *, on: bool) -> float:
    from contracts.redaction import RedactionSpec
    from worker.store.index.writer_process import open_index_writer
    from worker.store.protocol import IngestItem

    items = [IngestItem(stream_seq=i + 1, data=b) for i, b in enumerate(bodies)]
    writer = await open_index_writer(db, redaction=RedactionSpec(on=on))
    try:
        start = time.perf_counter()
        for i in range(0, len(items), BATCH):
            await writer.apply(items[i : i + BATCH])
        await writer.sync_search()  # searchable, not only stored
        return time.perf_counter() - start
    finally:
        await writer.close()


def payload_strings(bodies: list[bytes]) -> list[str]:
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for body in bodies:
        walk(orjson.loads(body)["payload"])
    return out


def detector_mb_s(strings: list[str]) -> tuple[float, dict[str, int]]:
    from contracts.redaction import Redactor

    redactor = Redactor()
    size = sum(len(s.encode()) for s in strings)
    start = time.perf_counter()
    for text in strings:
        redactor.redact(text)
    elapsed = time.perf_counter() - start
    return size / elapsed / 1e6, dict(redactor.found)


async def run(config: corpus.CorpusConfig, work_dir: Path | None = None) -> dict[str, Any]:
    bodies = planted_corpus(config)
    seconds: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="sq-bench-redaction-", dir=work_dir) as tmp:
        for attempt, on in enumerate((False, True, False, True)):
            db = Path(tmp) / f"index-{attempt}.sqlite"
            seconds[on].append(await ingest_seconds(bodies, db, on=on))
    best_on, best_off = min(seconds[True]), min(seconds[False])
    strings = payload_strings(bodies)
    mb_s, found = detector_mb_s(strings)
    checks = [
        Check(
            "ingest seconds (redaction on vs off)",
            measured=best_on,
            floor=best_off,
            unit="s",
            kind="max",
            target=TARGET,
        )
    ]
    measurements = {
        "events": len(bodies),
        "bytes": sum(len(b) for b in bodies),
        "seconds_on": seconds[True],
        "seconds_off": seconds[False],
        "events_per_s_on": len(bodies) / best_on,
        "events_per_s_off": len(bodies) / best_off,
        "detector_mb_per_s": mb_s,
        "detector_strings": len(strings),
        "redacted_by_kind": found,
    }
    params = {"sessions": config.sessions, "events": config.events, "plant_every": PLANT_EVERY}
    return result_dict("redaction", params=params, checks=checks, measurements=measurements)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.redaction", description=__doc__)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--events", type=int, default=250)
    parser.add_argument("--no-write", action="store_true", help="do not write the result file")
    args = parser.parse_args(argv)
    config = corpus.CorpusConfig(sessions=args.sessions, events=args.events)
    result = asyncio.run(run(config))
    m = result["measurements"]
    info = {
        "events": m["events"],
        "events/s on": round(m["events_per_s_on"]),
        "events/s off": round(m["events_per_s_off"]),
        "detector MB/s": round(m["detector_mb_per_s"], 1),
        "credentials redacted (detector pass)": sum(m["redacted_by_kind"].values()),
    }
    print(format_table("redaction", checks_of(result), info))
    if not args.no_write:
        print(f"written {write_result(result)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
