"""Redaction bench: what the credential rules cost ingestion, and the detector's speed.

1. The corpus (``bench.corpus``) with a credential planted in one event in fifty (every
   rule's example in turn, generated at run time), encoded once. Denser than real
   transcripts (published counts: about two credentials a transcript of hundreds of
   events), so the cost measured is an upper bound.
2. End to end, as the worker ingests: the corpus published to a fresh JetStream stream
   while the worker's ingest consumer (pull consumer, ingest actor, index writer child:
   checking, redaction, SQLite, the search index) reads it into a fresh index, timed from
   the first publish until the search index has committed the last event; redaction on
   and off (both the consumer's and the writer's), alternately, ``--runs`` times each, in
   the same run on the same server; the best run of each.
3. The index writer alone (no NATS: the stream's share is the same either way, so the
   ratio is stricter), on and off alternately, twice each.
4. The detector alone over every payload string of the corpus: MB/s, wall and CPU time;
   and the writer's redaction step alone (the gate, the payload walk) in CPU µs an event,
   which says what the ratio should be where the machine is not shared.

Target: ingest with redaction ≤ 1.10× the time without, end to end (the check) and in the
writer alone (reported beside it).
``python -m bench.redaction --sessions 200 --events 250``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import orjson

from bench import corpus
from bench.report import (
    Check,
    bench_subjects,
    checks_of,
    format_table,
    nats_url,
    quiet_worker_logs,
    result_dict,
    write_result,
)

TARGET: Final = 1.10
PLANT_EVERY: Final = 50
# Real transcripts' density (published counts: about two credentials a transcript of
# hundreds of events): the gate's pass share is reported for it too.
REALISTIC_EVERY: Final = 150
BATCH: Final = 500


def planted_corpus(config: corpus.CorpusConfig) -> list[bytes]:
    """``planted_events``, each encoded once."""
    return [corpus.encode(event) for event in planted_events(config)]


def planted_events(config: corpus.CorpusConfig, every: int = PLANT_EVERY) -> list[dict[str, Any]]:
    """The corpus's events, one in ``every`` with a generated credential appended to its
    first string field (or in a field of its own)."""
    from contracts.redaction import RULES, generate

    out = []
    for n, event in enumerate(corpus.generate(config)):
        if n % every == every - 1:
            rule = RULES[(n // every) % len(RULES)]
            text = rule.example.before + generate(rule.example.secret) + rule.example.after
            payload = event["payload"]
            for key, value in payload.items():
                if isinstance(value, str) and key not in ("cwd", "parent_session_id"):
                    payload[key] = f"{value}\n{text}"
                    break
            else:  # no text field (a step marker): one more field holds it
                payload["note"] = text
        out.append(event)
    return out


def writer_cpu_seconds(writer: object) -> float:
    """CPU seconds (user and system) the index writer's child process has used, or 0.0
    when it has none (a thread writer): on a shared machine CPU time says what redaction
    costs far more steadily than wall time, which other people's work stretches."""
    pid = getattr(writer, "pid", None)
    if not isinstance(pid, int):
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def ingest_seconds(bodies: list[bytes], db: Path, *, on: bool) -> tuple[float, float]:
    from contracts.redaction import RedactionSpec
    from worker.store.index.writer_process import open_index_writer
    from worker.store.writer_protocol import IngestItem

    items = [IngestItem(stream_seq=i + 1, data=b) for i, b in enumerate(bodies)]
    writer = await open_index_writer(db, redaction=RedactionSpec(on=on))
    try:
        start, cpu = time.perf_counter(), writer_cpu_seconds(writer)
        for i in range(0, len(items), BATCH):
            await writer.apply(items[i : i + BATCH])
        await writer.sync_search()  # searchable, not only stored
        return time.perf_counter() - start, writer_cpu_seconds(writer) - cpu
    finally:
        await writer.close()


async def stream_ingest_seconds(
    url: str, events: list[dict[str, Any]], db: Path, *, on: bool, timeout_s: float
) -> tuple[float, float]:
    """Seconds from the first publish of ``events`` to a fresh stream until the worker's
    ingest consumer has stored them all and the search index has committed the last, and
    the CPU seconds the writer's child used meanwhile."""
    import nats

    from bench.child import wait_searchable
    from contracts.redaction import RedactionSpec
    from worker.config import WorkerConfig
    from worker.replica.ingest_consumer import EventConsumer, ensure_events_stream
    from worker.store.index.writer_process import open_index_writer

    defaults = WorkerConfig()
    spec = RedactionSpec(on=on)
    subjects = bench_subjects("red")
    nc = await nats.connect(url)
    js = nc.jetstream()
    try:
        await ensure_events_stream(js, subjects)
        writer = await open_index_writer(
            db,
            mode=defaults.ingest_writer,
            text_cap_bytes=defaults.text_cap_bytes,
            max_event_bytes=defaults.max_event_bytes,
            redaction=spec,
        )
        consumer = EventConsumer(
            nc,
            writer,
            subjects=subjects,
            batch_size=defaults.ingest_batch_size,
            batch_ms=defaults.ingest_batch_ms,
            redaction=spec,
        )
        start, cpu = time.perf_counter(), writer_cpu_seconds(writer)
        task = asyncio.create_task(consumer.run())
        try:
            await corpus.publish_events(js, subjects, events)
            last_seq = (await js.stream_info(subjects.events_stream)).state.last_seq
            await asyncio.wait_for(consumer.actor.wait_applied(last_seq), timeout_s)
            await wait_searchable(db, timeout_s)
            elapsed = time.perf_counter() - start
            cpu = writer_cpu_seconds(writer) - cpu
            if consumer.actor.stats.applied != len(events):
                raise RuntimeError(
                    f"{consumer.actor.stats.applied} of {len(events)} events applied"
                )
        finally:
            consumer.stop()
            await task
            await writer.close()
        await js.delete_stream(subjects.events_stream)
        return elapsed, cpu
    finally:
        await nc.close()


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


def cpu_costs(
    bodies: list[bytes], strings: list[str], realistic: list[bytes], repeats: int = 5
) -> dict[str, float]:
    """CPU time (``process_time``, best of ``repeats``), which a loaded machine inflates far
    less than wall time: the writer's redaction step per event (``batch.redacted``: the
    gate over the payload's JSON, then the payload walk when it passes) and the detector's
    MB/s over every payload string."""
    from contracts.redaction import Redactor
    from worker.store.index.batch import redacted

    redactor = Redactor()
    events = [(orjson.loads(body), body.decode()) for body in bodies]
    size = sum(len(s.encode()) for s in strings)
    step = detect = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for event, text in events:
            redacted(redactor, event["type"], event["payload"], text)
        step = min(step, time.process_time() - start)
        start = time.process_time()
        for text in strings:
            redactor.redact(text)
        detect = min(detect, time.process_time() - start)
    return {
        "writer_step_cpu_us_per_event": step / len(events) * 1e6,
        "detector_cpu_mb_per_s": size / detect / 1e6 if detect else 0.0,
        "gate_passed_share": (
            sum(redactor.payload_might_hold(e["payload"], t) for e, t in events) / len(events)
        ),
        "gate_passed_share_realistic": sum(
            redactor.payload_might_hold(orjson.loads(b)["payload"], b.decode()) for b in realistic
        )
        / len(realistic),
    }


async def run(
    config: corpus.CorpusConfig,
    work_dir: Path | None = None,
    *,
    url: str | None = None,
    runs: int = 2,
    timeout_s: float = 1800.0,
) -> dict[str, Any]:
    events = planted_events(config)
    bodies = [corpus.encode(event) for event in events]
    # Alternated in ABBA order (off on, on off, ...): a load that drifts during the run
    # weighs on both alike, not always on the second of each pair.
    order = [on for i in range(runs) for on in ((False, True) if i % 2 == 0 else (True, False))]
    stream: dict[bool, list[float]] = {True: [], False: []}
    seconds: dict[bool, list[float]] = {True: [], False: []}
    stream_cpu: dict[bool, list[float]] = {True: [], False: []}
    writer_cpu: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="sq-bench-redaction-", dir=work_dir) as tmp:
        async with nats_url(url) as resolved:
            for attempt, on in enumerate(order):
                db = Path(tmp) / f"stream-{attempt}.sqlite"
                wall, cpu_s = await stream_ingest_seconds(
                    resolved, events, db, on=on, timeout_s=timeout_s
                )
                stream[on].append(wall)
                stream_cpu[on].append(cpu_s)
        for attempt, on in enumerate((False, True, True, False)):  # ABBA as well
            db = Path(tmp) / f"index-{attempt}.sqlite"
            wall, cpu_s = await ingest_seconds(bodies, db, on=on)
            seconds[on].append(wall)
            writer_cpu[on].append(cpu_s)
    best_on, best_off = min(stream[True]), min(stream[False])
    writer_on, writer_off = min(seconds[True]), min(seconds[False])
    strings = payload_strings(bodies)
    mb_s, found = detector_mb_s(strings)
    realistic = [corpus.encode(e) for e in planted_events(config, REALISTIC_EVERY)]
    cpu = cpu_costs(bodies, strings, realistic)
    checks = [
        Check(
            "ingest seconds over NATS (redaction on vs off)",
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
        "stream_seconds_on": stream[True],
        "stream_seconds_off": stream[False],
        "stream_events_per_s_on": len(bodies) / best_on,
        "stream_events_per_s_off": len(bodies) / best_off,
        "stream_ratio": best_on / best_off,
        "seconds_on": seconds[True],
        "seconds_off": seconds[False],
        "events_per_s_on": len(bodies) / writer_on,
        "events_per_s_off": len(bodies) / writer_off,
        "writer_ratio": writer_on / writer_off,
        # the writer child's CPU seconds in each run, and the ratio of the medians
        "stream_writer_cpu_on": stream_cpu[True],
        "stream_writer_cpu_off": stream_cpu[False],
        "stream_writer_cpu_ratio": _median_ratio(stream_cpu),
        "writer_cpu_on": writer_cpu[True],
        "writer_cpu_off": writer_cpu[False],
        "writer_cpu_ratio": _median_ratio(writer_cpu),
        "detector_mb_per_s": mb_s,
        "detector_strings": len(strings),
        "redacted_by_kind": found,
        **cpu,
    }
    params = {
        "sessions": config.sessions,
        "events": config.events,
        "plant_every": PLANT_EVERY,
        "runs": runs,
    }
    return result_dict("redaction", params=params, checks=checks, measurements=measurements)


def _median_ratio(values: dict[bool, list[float]]) -> float:
    on, off = statistics.median(values[True]), statistics.median(values[False])
    return on / off if off else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.redaction", description=__doc__)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--events", type=int, default=250)
    parser.add_argument("--runs", type=int, default=3, help="end-to-end runs of each, alternated")
    parser.add_argument("--nats-url", default=None, help="default: a nats-server started here")
    parser.add_argument("--no-write", action="store_true", help="do not write the result file")
    args = parser.parse_args(argv)
    config = corpus.CorpusConfig(sessions=args.sessions, events=args.events)
    logs = quiet_worker_logs("redaction")
    result = asyncio.run(run(config, url=args.nats_url, runs=args.runs))
    m = result["measurements"]
    info = {
        "events": m["events"],
        "over NATS events/s on / off": (
            f"{m['stream_events_per_s_on']:,.0f} / {m['stream_events_per_s_off']:,.0f}"
        ),
        "over NATS seconds off / on (ABBA order, each setting's runs in turn)": (
            " ".join(f"{x:.1f}" for x in m["stream_seconds_off"])
            + " / "
            + " ".join(f"{x:.1f}" for x in m["stream_seconds_on"])
        ),
        "writer child CPU s over NATS off / on (median ratio)": (
            " ".join(f"{x:.1f}" for x in m["stream_writer_cpu_off"])
            + " / "
            + " ".join(f"{x:.1f}" for x in m["stream_writer_cpu_on"])
            + f" ({m['stream_writer_cpu_ratio']:.3f}x)"
        ),
        "writer alone CPU s off / on (median ratio)": (
            " ".join(f"{x:.1f}" for x in m["writer_cpu_off"])
            + " / "
            + " ".join(f"{x:.1f}" for x in m["writer_cpu_on"])
            + f" ({m['writer_cpu_ratio']:.3f}x)"
        ),
        "writer alone events/s on / off (ratio)": (
            f"{m['events_per_s_on']:,.0f} / {m['events_per_s_off']:,.0f} ({m['writer_ratio']:.3f}x)"
        ),
        "detector MB/s wall / CPU": (
            f"{m['detector_mb_per_s']:.1f} / {m['detector_cpu_mb_per_s']:.1f}"
        ),
        "writer's redaction step, CPU µs an event (gate passed)": (
            f"{m['writer_step_cpu_us_per_event']:.1f} ({m['gate_passed_share']:.1%})"
        ),
        f"gate passed, one credential in {REALISTIC_EVERY} events": (
            f"{m['gate_passed_share_realistic']:.1%}"
        ),
        "credentials redacted (detector pass)": sum(m["redacted_by_kind"].values()),
    }
    print(format_table("redaction", checks_of(result), info))
    print(f"worker log: {logs}", file=sys.stderr)
    if not args.no_write:
        print(f"written {write_result(result)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
