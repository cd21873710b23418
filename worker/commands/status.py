"""``sessionquery status``: the index against its stream (``doctor`` and ``deadletters``,
beside it, share its flags and its report).

``status`` reads the index file (read-only; the worker may be running) and, when NATS is
reachable, the stream's state: stream identity, first/last sequence, applied sequence, lag
in events and seconds, history unavailable before, dead letters by reason, schema version,
file size, and a rebuild in progress (``<db>.rebuild``) with its progress. The running
worker reports the same fields in ``$SRV.STATS`` (the manifest endpoint's data).
Which index: ``--db``, else ``--home``'s ``index.sqlite``, else the worker's own setting
(``SESSIONQUERY_DB_PATH``, default ``.sessionquery/index.sqlite``). The report says which
file it read and whether a worker serving the prefix uses it (by the index's id, which
each worker reports in ``$SRV.STATS``); with no such file here, it shows what the serving
workers report of their own indexes over NATS, named as theirs (a worker names its file
by its name only: its path stays on its host), and lists the serving workers: each one's
partitions, how far it applied them against its partitions' last event, and how its index
started (``joined``: a snapshot, a replay, a resume). The report itself is
``index_report``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path
from typing import Any, Final

import orjson

from worker.replica import semantic
from worker.replica.continuity import history_note
from worker.replica.index_report import index_status, lag_seconds

EXIT_OK: Final = 0
EXIT_PROBLEM: Final = 1
EXIT_USAGE: Final = 2


# -- commands ------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.config_flags import add_subject_arguments
    from worker.transport.flags import add_nats_arguments

    parser.add_argument(
        "--db", type=Path, default=None, help="index file (default <home>/index.sqlite)"
    )
    parser.add_argument(
        "--home", type=Path, default=None,
        help="the worker's state directory: read <home>/index.sqlite (default: the"
        " worker's own index setting, SESSIONQUERY_DB_PATH or .sessionquery/index.sqlite)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--follow", action="store_true", help="deadletters: keep printing")
    parser.add_argument("--limit", type=int, default=100, help="deadletters: how many")
    parser.add_argument(
        "--imports-bucket", default="sessionquery-imports",
        help="status: the KV bucket where import and watch keep each format's figures",
    )  # fmt: skip
    add_subject_arguments(parser)
    add_nats_arguments(parser)


def index_file_of(args: argparse.Namespace) -> Path:
    """The index file to read: ``--db``, ``--home``, else the one the worker would open."""
    if args.db is not None:
        return Path(args.db)
    if args.home is not None:
        return Path(args.home) / "index.sqlite"
    from worker.config import WorkerConfig, load
    from worker.settings import ConfigError

    try:
        return Path(load().db_path)
    except ConfigError:  # another setting is malformed: the default place, still
        return Path(WorkerConfig().db_path)


async def stream_report(args: argparse.Namespace, db: Path) -> dict[str, Any]:
    from worker.config_flags import subjects_from_args
    from worker.replica.continuity import stream_state
    from worker.transport.connection import connect_reporting
    from worker.transport.flags import options_from_args

    subjects = subjects_from_args(args)
    report: dict[str, Any]
    options = options_from_args(args)
    if options.url is None:
        report = await index_status(_Config(db), None)
        report["stream_error"] = "no NATS URL given (--nats-url or NATS_URL)"
        return report
    try:
        nc = await connect_reporting(options, attempts=1, name="sessionquery-status")
    except Exception as exc:
        report = await index_status(_Config(db), None)
        report["stream_error"] = str(exc)
        return report
    try:
        js = nc.jetstream()
        alone = await index_status(_Config(db), None)
        imports = await _imports(js, getattr(args, "imports_bucket", None))
        try:
            # The stream as seen by the partitions the index holds.
            held = str(alone.get("partitions") or "all")
            stream = await stream_state(js, subjects.events_stream, held, subjects)
        except Exception as exc:
            alone["stream_error"] = f"stream {subjects.events_stream}: {exc}"
            alone.update(imports)
            return alone
        report = await index_status(_Config(db), stream)
        report.update(imports)
        served: dict[str, dict[str, Any]] = {}
        report["workers"] = await partition_map(nc, subjects.prefix, served)
        applied = int(report.get("applied_seq") or 0)
        report["lag_seconds"] = round(
            await lag_seconds(js, stream.name, applied, stream.target_seq), 3
        )
        return which_index(report, served)
    finally:
        await nc.close()


async def _imports(js: Any, bucket: str | None) -> dict[str, Any]:
    """Each format's last import or watch figures (``imports``), or why they are not known
    (``imports_error``)."""
    import nats.errors

    from worker.importers.figures import read_formats

    if not bucket:
        return {}
    try:
        return {"imports": await read_formats(js, bucket)}
    except (nats.errors.Error, TimeoutError) as exc:
        return {"imports": {}, "imports_error": f"{bucket}: {exc!r}"}


async def _answers(nc: Any, subject: str, within_s: float = 0.5) -> list[dict[str, Any]]:
    """Every answer to a request on a subject many services answer (``$SRV.*``)."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    try:
        await nc.publish(subject, b"", reply=inbox)
        answers: list[dict[str, Any]] = []
        with contextlib.suppress(TimeoutError):
            while True:
                msg = await sub.next_msg(timeout=within_s)
                if not msg.data:
                    continue  # "no responders": a status without a body, when none serve
                with contextlib.suppress(orjson.JSONDecodeError):
                    answer = orjson.loads(msg.data)
                    if isinstance(answer, dict):
                        answers.append(answer)
        return answers
    finally:
        await sub.unsubscribe()


async def partition_map(
    nc: Any, prefix: str, served: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The workers serving ``prefix``: the partitions each holds and how far it applied
    them (their ``$SRV.INFO`` metadata and the manifest endpoint's ``$SRV.STATS`` data).
    ``served``, when given, receives each worker's whole report of its index by id."""
    from contracts.subjects import SERVICE_NAME
    from worker.serving.service import MANIFEST_ENDPOINT

    # Both asked at once: each collects answers for its whole window.
    info_answers, stats_answers = await asyncio.gather(
        _answers(nc, f"$SRV.INFO.{SERVICE_NAME}"), _answers(nc, f"$SRV.STATS.{SERVICE_NAME}")
    )
    infos = {
        a["id"]: a
        for a in info_answers
        if (a.get("metadata") or {}).get("subject_prefix") == prefix
    }
    applied: dict[str, dict[str, Any]] = {}
    for answer in stats_answers:
        for endpoint in answer.get("endpoints") or ():
            if endpoint.get("name") == MANIFEST_ENDPOINT and answer.get("id") in infos:
                applied[answer["id"]] = (endpoint.get("data") or {}).get("index") or {}
    workers = [
        _worker_row(worker_id, info, applied.get(worker_id, {}))
        for worker_id, info in infos.items()
    ]
    if served is not None:
        served.update(applied)
    return sorted(workers, key=lambda w: (str(w["partitions"]), w["id"]))


def which_index(report: dict[str, Any], served: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Say which index the report describes. A file here: whether a serving worker uses it
    (one that none uses is another index than the one answering, e.g. a worker started
    with another ``--home``). No file here: the serving workers' own reports, over NATS."""
    path = str(report["index"])
    if report.get("exists"):
        users = [wid for wid, r in served.items() if r.get("index_id") == report.get("index_id")]
        report["index_source"] = "file"
        report["served_by"] = sorted(users)
        return report
    reports = {wid: r for wid, r in served.items() if r}
    if not reports:
        report["index_source"] = "none"
        return report
    # The first worker's report stands for the index (the others are listed with theirs).
    worker_id = sorted(reports)[0]
    remote = dict(reports[worker_id])
    remote.update({"workers": report.get("workers"), "index_source": "worker",
                   "index_worker": worker_id, "index_not_found": path})  # fmt: skip
    remote.setdefault("exists", True)
    return remote


class _Config:
    def __init__(self, db: Path) -> None:
        self.db_path = db


def run(args: argparse.Namespace) -> int:
    report = asyncio.run(stream_report(args, index_file_of(args)))
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        print("\n".join(format_status(report)))
    unserved = (
        report.get("index_source") == "file"
        and report.get("workers")
        and not report.get("served_by")
    )
    ok = report.get("exists") and report.get("matches_stream", True) and not unserved
    return EXIT_OK if ok else EXIT_PROBLEM


def format_status(report: dict[str, Any]) -> list[str]:
    lines = [f"index            {report['index']}{_index_source(report)}"]
    if not report.get("exists"):
        lines.append("                 (no such file: the worker creates it when it starts)")
    elif report.get("index_source") == "worker":
        lines.append(
            f"                 (no {report['index_not_found']} here: --db or --home reads the"
            " worker's file on its host)"
        )
    stream = report.get("stream")
    if stream:
        lines.append(f"stream           {stream['name']} (created {stream['created']})")
        lines.append(
            f"stream seqs      first {stream['first_seq']}, last {stream['last_seq']},"
            f" {stream['messages']} messages"
        )
    else:
        lines.append(f"stream           unknown: {report.get('stream_error', 'not checked')}")
    if report.get("exists"):
        lines.append(
            f"index built from {report.get('stream_name') or '(not recorded)'}"
            f" (created {report.get('stream_created') or '?'})"
        )
        held = (stream or {}).get("held_last_seq")
        shard = stream is not None and held is not None and held != stream.get("last_seq")
        lines.append(
            f"applied seq      {report.get('applied_seq')}"
            + (f" (last seq in its partitions: {held})" if shard else "")
        )
        lines.append(f"search index     {search_line(report)}")
        count = f" of {stream['partition_count']}" if stream else ""
        lines.append(f"partitions       {report.get('partitions', 'all')}{count}")
        if stream:
            lines.append(
                f"lag              {report.get('lag_events', 0)} events,"
                f" {report.get('lag_seconds', 0.0)} s"
            )
        if report.get("joined"):
            lines.append(f"joined           {joined_note(report['joined'])}")
        before = report.get("history_unavailable_before")
        lines.append(f"history          {history_note(before) if before else 'complete'}")
        dead = report.get("dead_letters") or {}
        total = sum(dead.values())
        detail = ", ".join(f"{k} {n}" for k, n in dead.items())
        lines.append(f"dead letters     {total}" + (f" ({detail})" if detail else ""))
        lines.append(
            f"schema version   {report.get('schema_version')}"
            f" (this worker: {report.get('schema_version_supported')})"
        )
        lines.append(f"index size       {report.get('index_bytes', 0):,} bytes")
        lines.append(f"semantic         {semantic.status_line(report.get('semantic'))}")
    rebuild = "no"
    if report.get("rebuild_running"):
        rebuild = (
            f"yes: applied {report.get('rebuild_applied_seq')}"
            f" of {report.get('rebuild_target_seq', '?')}"
        )
    lines.append(f"rebuild running  {rebuild}")
    if "divergence" in report:
        lines.append(f"DIVERGED         {report['divergence']}")
    lines.extend(imports_lines(report))
    workers = report.get("workers")
    if workers is not None:
        lines.append(f"workers serving  {len(workers)}")
        for w in workers:
            count = f" of {w['partition_count']}" if w.get("partition_count") else ""
            held = w.get("held_last_seq")
            through = "" if held is None else f" (its partitions' last: {held})"
            lines.append(
                f"  {w['id']}  partitions {w['partitions']}{count}, applied seq"
                f" {w.get('applied_seq', '?')}{through}, lag {w.get('lag_events', '?')} events,"
                f" index id {w.get('index_id') or '?'}"
            )
            if w.get("joined"):
                lines.append(f"    joined: {joined_note(w['joined'])}")
            if w.get("semantic"):
                # Each worker embeds the events of its own partitions, nothing else.
                lines.append(
                    f"    semantic: partitions {w['partitions']}:"
                    f" {semantic.status_line(w['semantic'])}"
                )
    return lines


def imports_lines(report: dict[str, Any]) -> list[str]:
    """Per format: its last import or watch, what it read, and the record kinds it did
    not know (format drift: the agent may have changed its files)."""
    from worker.importers.skips import kinds_text, unknown_text

    if "imports" not in report:
        return []
    imports: dict[str, dict[str, Any]] = report["imports"]
    if report.get("imports_error"):
        return [f"imports          unknown: {report['imports_error']}"]
    if not imports:
        return ["imports          none recorded (sessionquery import or watch records them)"]
    lines = [f"imports          {len(imports)} formats"]
    for fmt, row in sorted(imports.items()):
        lines.append(
            f"  {fmt}: last {row.get('command', 'import')} {row.get('last_import', '?')}"
            f" on {row.get('host', '?')}: {row.get('files', 0)} files,"
            f" {row.get('sessions', 0)} sessions, {row.get('events', 0)} events"
        )
        unknown = row.get("unknown") or {}
        lines.append(
            f"    {unknown_text(unknown)}" if unknown else "    unknown record kinds: none"
        )
        if row.get("skipped"):
            lines.append(f"    skipped by design: {kinds_text(row['skipped'])}")
        if row.get("unrecognised"):
            lines.append(f"    sources not recognised as {fmt}: {row['unrecognised']}")
    return lines


def _worker_row(worker_id: str, info: dict[str, Any], index: dict[str, Any]) -> dict[str, Any]:
    """One serving worker as ``status`` lists it, from its INFO metadata and the index part
    of its STATS."""
    return {
        "id": worker_id,
        "partitions": info["metadata"].get("partitions", "all"),
        "partition_count": info["metadata"].get("partition_count"),
        "applied_seq": index.get("applied_seq"),
        # The stream's last seq in the worker's partitions: what it is complete through
        # once caught up (below the stream's last_seq when later events are elsewhere).
        "held_last_seq": (index.get("stream") or {}).get("held_last_seq"),
        "lag_events": index.get("lag_events"),
        "index_id": index.get("index_id"),
        "joined": index.get("joined"),
        "semantic": index.get("semantic"),
    }


def search_line(report: dict[str, Any]) -> str:
    """How far the search index's last commit reaches against the store: searches miss
    what lies between (a writer that stopped following shows here, not in ``lag``)."""
    through = report.get("search_applied_seq")
    if through is None:
        return "none (or unreadable)"
    behind = int(report.get("applied_seq") or 0) - int(through)
    return f"through seq {through}" + (f", {behind} behind the store" if behind > 0 else "")


def joined_note(joined: dict[str, Any]) -> str:
    """How a worker's index started, in words (``snapshot_join.Join.report``)."""
    how = joined.get("how")
    if how == "snapshot":
        return (
            f"from snapshot {joined.get('snapshot')} (through stream seq"
            f" {joined.get('stream_seq')}), then the stream past it"
        )
    if how == "resume":
        return f"resumed its index file (from stream seq {joined.get('stream_seq')})"
    return f"replayed the stream from its start ({joined.get('reason') or 'no snapshot'})"


def _index_source(report: dict[str, Any]) -> str:
    source = report.get("index_source")
    if source == "worker":
        return f"  (reported over NATS by worker {report['index_worker']}: its index)"
    if source == "file" and report.get("workers"):
        users = report.get("served_by") or []
        if not users:
            return "  (this file; NO serving worker uses it: theirs are listed below)"
        return f"  (this file; served by worker {', '.join(users)})"
    if source == "file":
        return "  (this file)"
    return ""
