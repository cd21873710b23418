"""Searches at archive scale (issue 41 item 4): the five tools asked of a home that
``bench.archive`` built, through the real request path (serve's NATS subjects).

1. Reuse a kept ``bench.archive`` directory (``--keep DIR``: its corpus file and ``home``):
   start ``sessionquery serve --home DIR/home`` (its embedded nats-server on a free port)
   and wait until the search index covers the store.
2. Questions drawn from the corpus itself, deterministic from ``--seed``: ``--sample``
   events read at evenly spaced offsets of the corpus file; their words counted by
   document frequency; then rare words (in one sampled event), common words (the most
   frequent), identifiers (snake_case, camelCase, dotted or slashed names) and
   multi-word questions (three consecutive words of one event). Each is asked by a
   session of the workspace the word was found in (the session itself for
   ``session_event_search`` half of the time), as a model would.
3. One requester at a time: ``--searches`` ``session_search`` questions (spread over the
   kinds), as many ``session_event_search``, and as many calls of each exact tool
   (``bench.loadgen.RequestMaker``: traces and reads of sessions of the caller's
   workspace); then ``--parallel`` requesters at once asking the same searches.
4. Prints p50/p99 per tool (and per question kind) and the CPU per request of serve and
   of its writer child (from /proc, over each sequential phase).

Targets (issue 41 item 4, at 5M events): ``session_search`` p50 <= 50 ms, p99 <= 300 ms;
``session_event_search`` p99 <= 100 ms; each exact tool p99 <= 10 ms. ``--check`` exits 1
when one is missed. ``bench.archive --searches N`` runs this after its import.

``--largest K`` asks only in the K largest workspaces (a heavy user's main repository).

``python -m bench.archive_search --keep /tmp/scale-1m --searches 400 [--largest 10]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from bench import archive, corpus, report
from bench.child import REPO_ROOT, wait_searchable
from bench.loadgen import RequestMaker

SEARCH_P50_MS: Final = 50.0
SEARCH_P99_MS: Final = 300.0
EVENT_SEARCH_P99_MS: Final = 100.0
EXACT_P99_MS: Final = 10.0
EXACT_TOOLS: Final = ("session_trace", "session_event_trace", "session_event_read")
KINDS: Final = ("rare", "common", "identifier", "phrase")
WARM_UP: Final = 20  # calls asked unmeasured first: readers opened, caches warm
CALL_TIMEOUT_S: Final = 60.0
# A word: letters, then letters, digits, _ . / - (an identifier or a path); blobs (base64,
# hashes) are longer than MAX_WORD and left out: nobody asks for one by hand.
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z0-9_./-]{2,}")
MAX_WORD: Final = 40
_IDENTIFIER: Final = re.compile(r"[a-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+|[A-Z][a-z0-9]+)+")
_PLAIN: Final = re.compile(r"[a-z]{4,}")


@dataclass(frozen=True, slots=True)
class Question:
    kind: str
    text: str
    session_id: str  # the session the words were found in
    cwd: str


def _texts(value: Any) -> list[str]:
    """Every string inside an event's payload (text, outputs, arguments, titles)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def sample_events(source: Path, count: int) -> list[dict[str, Any]]:
    """``count`` events at evenly spaced offsets of the corpus file (the line after each
    offset): spread over the whole archive without reading all of it."""
    import orjson

    size = source.stat().st_size
    events: list[dict[str, Any]] = []
    with source.open("rb") as fh:
        for i in range(count):
            fh.seek(size * i // count)
            if i:
                fh.readline()  # the rest of a line cut by the offset
            line = fh.readline()
            if line:
                events.append(orjson.loads(line))
    return events


def largest_workspaces(plans: Sequence[corpus.SessionPlan], count: int) -> set[str]:
    """The ``count`` workspaces holding the most events (ties: by path)."""
    sizes: Counter[str] = Counter()
    for plan in plans:
        sizes[plan.cwd] += plan.events
    return {cwd for cwd, _ in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:count]}


def draw_questions(
    source: Path,
    plans: Sequence[corpus.SessionPlan],
    count: int,
    *,
    sample: int,
    seed: int,
    largest: int = 0,
) -> list[Question]:
    """``count`` questions, the kinds in turn, drawn from ``sample`` events of the corpus;
    ``largest``: only from events of the ``largest`` biggest workspaces (a heavy user's
    main repository: a search's cost follows its workspace's size)."""
    cwd_of = {plan.session_id: plan.cwd for plan in plans}
    only = largest_workspaces(plans, largest) if largest else None
    found: list[tuple[str, list[str]]] = []  # (session_id, words of one event)
    df: Counter[str] = Counter()
    for event in sample_events(source, sample):
        if only is not None and cwd_of.get(event["session_id"]) not in only:
            continue
        words = [
            w.rstrip("./-")
            for text in _texts(event.get("payload"))
            for w in _WORD.findall(text)
            if len(w) <= MAX_WORD
        ]
        if not words:
            continue
        found.append((event["session_id"], words))
        df.update({w.lower() for w in words})
    rng = random.Random(seed)
    common = [w for w, _ in df.most_common(60) if _PLAIN.fullmatch(w)]
    pools: dict[str, list[tuple[str, str]]] = {k: [] for k in KINDS}
    for session_id, words in found:
        for w in dict.fromkeys(words):
            if _IDENTIFIER.fullmatch(w):
                pools["identifier"].append((session_id, w))
            elif _PLAIN.fullmatch(w) and df[w] == 1:
                pools["rare"].append((session_id, w))
        plain = [w for w in words if _PLAIN.fullmatch(w.lower())]
        if len(plain) >= 3:
            start = rng.randrange(len(plain) - 2)
            pools["phrase"].append((session_id, " ".join(plain[start : start + 3]).lower()))
    for session_id, words in found:
        for w in dict.fromkeys(words):
            if w.lower() in common:
                pools["common"].append((session_id, w.lower()))
    questions: list[Question] = []
    kinds = [k for k in KINDS if pools[k]]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        session_id, text = rng.choice(pools[kind])
        questions.append(Question(kind, text, session_id, cwd_of.get(session_id, "")))
    return questions


async def _call(client: Any, tool: str, arguments: dict[str, Any], caller: str, cwd: str) -> Any:
    """One request as a model's would go: routed by the caller's workspace (serve holds
    every partition and answers on the partitioned subjects)."""
    execution = {"agent": {"session_id": caller}}
    return await client.call(tool, arguments, execution, timeout=CALL_TIMEOUT_S, cwd=cwd)


def _callers(plans: Sequence[corpus.SessionPlan]) -> dict[str, list[str]]:
    by_cwd: dict[str, list[str]] = {}
    for plan in plans:
        by_cwd.setdefault(plan.cwd, []).append(plan.session_id)
    return by_cwd


def plan_calls(
    questions: Sequence[Question], plans: Sequence[corpus.SessionPlan], seed: int
) -> dict[str, list[tuple[str, dict[str, Any], str, str]]]:
    """Per tool: (kind, arguments, caller session id, its cwd), deterministic."""
    rng = random.Random(seed + 1)
    by_cwd = _callers(plans)
    calls: dict[str, list[tuple[str, dict[str, Any], str, str]]] = {}
    for q in questions:
        caller = rng.choice(by_cwd.get(q.cwd) or [q.session_id])
        calls.setdefault("session_search", []).append((q.kind, {"query": q.text}, caller, q.cwd))
        args: dict[str, Any] = {"query": q.text}
        if rng.random() < 0.5:
            args["session_id"] = q.session_id
        calls.setdefault("session_event_search", []).append((q.kind, args, caller, q.cwd))
    maker = RequestMaker(plans, foreign_share=0.0, seed=seed + 2)
    for tool in EXACT_TOOLS:
        for _ in questions:
            arguments, plan = maker.request(tool)
            calls.setdefault(tool, []).append(("exact", arguments, plan.session_id, plan.cwd))
    return calls


def _median_workspace_events(
    plans: Sequence[corpus.SessionPlan], questions: Sequence[Question]
) -> int:
    """The median size (events) of the workspaces the questions were asked in."""
    sizes: Counter[str] = Counter()
    for plan in plans:
        sizes[plan.cwd] += plan.events
    asked = sorted(sizes[q.cwd] for q in questions)
    return asked[len(asked) // 2] if asked else 0


def _rss_parts_mib(pid: int) -> dict[str, float]:
    parts: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("RssAnon", "RssFile", "RssShmem"):
                parts[key] = int(rest.split()[0]) / 1024
    return parts


async def _wait_serving(client: Any, serve: asyncio.subprocess.Process, timeout_s: float) -> None:
    """Until serve answers the manifest: it subscribes its tools after opening the index."""
    from contracts.errors import SessionQueryClientError

    deadline = time.perf_counter() + timeout_s
    while True:
        try:
            await client.partition_count()
            return
        except SessionQueryClientError:
            if time.perf_counter() > deadline or serve.returncode is not None:
                raise
            await asyncio.sleep(0.2)


def _cpu_by_role(root: int) -> dict[str, float]:
    """CPU seconds (all threads, ns resolution) of serve and its writer child."""
    out: dict[str, float] = {}
    for pid in archive._descendants(root):
        role = archive._role(pid, root)
        if role in ("serve", "writer"):
            with contextlib.suppress(OSError):
                out[role] = out.get(role, 0.0) + report.threads_cpu_s(pid)
    return out


async def _sequential(
    client: Any, tool: str, calls: Sequence[tuple[str, dict[str, Any], str, str]], root: int
) -> dict[str, Any]:
    for _, arguments, caller, cwd in calls[:WARM_UP]:
        await _call(client, tool, arguments, caller, cwd)
    by_kind: dict[str, list[float]] = {}
    seconds: list[float] = []
    codes: Counter[str] = Counter()
    sizes: list[int] = []
    cpu0 = _cpu_by_role(root)
    for kind, arguments, caller, cwd in calls:
        t0 = time.perf_counter()
        reply = await _call(client, tool, arguments, caller, cwd)
        elapsed = time.perf_counter() - t0
        seconds.append(elapsed)
        by_kind.setdefault(kind, []).append(elapsed)
        codes["ok" if reply.status == "ok" else reply.error.code.value] += 1
        if reply.content is not None:
            sizes.append(len(reply.content))
    cpu1 = _cpu_by_role(root)
    out: dict[str, Any] = {
        "latency_ms": asdict(report.Latency.of(seconds)),
        "replies": dict(codes),
        "cpu_ms_per_request": {
            role: (cpu1[role] - cpu0.get(role, 0.0)) / len(calls) * 1e3 for role in cpu1
        },
    }
    if sizes:  # the reply's text: a search that finds nothing answers in a few bytes
        out["mean_reply_chars"] = sum(sizes) / len(sizes)
    if len(by_kind) > 1:
        out["by_kind"] = {k: asdict(report.Latency.of(v)) for k, v in by_kind.items()}
    return out


async def _parallel(
    client: Any, tool: str, calls: Sequence[tuple[str, dict[str, Any], str, str]], lanes: int
) -> dict[str, Any]:
    queue = list(reversed(calls))
    seconds: list[float] = []
    codes: Counter[str] = Counter()

    async def lane() -> None:
        while queue:
            _, arguments, caller, cwd = queue.pop()
            t0 = time.perf_counter()
            reply = await _call(client, tool, arguments, caller, cwd)
            seconds.append(time.perf_counter() - t0)
            codes["ok" if reply.status == "ok" else reply.error.code.value] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(lanes)))
    wall = time.perf_counter() - t0
    return {
        "latency_ms": asdict(report.Latency.of(seconds)),
        "replies": dict(codes),
        "per_s": len(calls) / wall if wall else 0.0,
    }


async def measure(
    home: Path,
    source: Path,
    total_events: int,
    *,
    searches: int,
    parallel: int = 4,
    sample: int = 4000,
    seed: int = 7,
    largest: int = 0,
    log: Path | None = None,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """Start serve on ``home`` (built from ``source``), ask the questions, stop it."""
    import nats

    from contracts.client import SessionQueryClient
    from contracts.subjects import Subjects

    _, plans = corpus.archive_plans(total_events, seed)
    questions = await asyncio.to_thread(
        draw_questions, source, plans, searches, sample=sample, seed=seed, largest=largest
    )
    calls = plan_calls(questions, plans, seed)
    port = archive._free_port()
    url = f"nats://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    log_fh = await asyncio.to_thread(archive._open_log, log or home.parent / "serve-search.log")
    serve = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "worker.cli", "serve", "--home", str(home),
        "--embedded-port", str(port), "--log-format", "json",
        stdout=log_fh, stderr=asyncio.subprocess.STDOUT, env=env,
    )  # fmt: skip
    m: dict[str, Any] = {
        "questions": Counter(q.kind for q in questions),
        "lanes": parallel,
        "largest_workspaces": largest,
        "workspace_events_median": _median_workspace_events(plans, questions),
    }
    try:
        nc = await archive._connect_when_up(nats, url, serve)
        await archive._wait_stream(nc.jetstream(), Subjects().events_stream, serve)
        m["searchable_after_start_s"] = await wait_searchable(
            home / "index.sqlite", timeout_s, poll_s=0.1
        )
        client = SessionQueryClient(nc, Subjects())
        await _wait_serving(client, serve, timeout_s)
        # The machine's load while measured: p99s on a shared machine are its queueing.
        m["loadavg_before"] = os.getloadavg()
        sequential: dict[str, Any] = {}
        for tool, planned in calls.items():
            sequential[tool] = await _sequential(client, tool, planned, serve.pid)
        m["sequential"] = sequential
        if parallel > 1:
            m["parallel"] = {
                tool: await _parallel(client, tool, calls[tool], parallel)
                for tool in ("session_search", "session_event_search")
            }
        m["loadavg_after"] = os.getloadavg()
        sampler = archive.TreeSampler(serve.pid)
        sampler.sample()
        m["rss_mib"] = {r: s.peak_rss_kib / 1024 for r, s in sampler.by_role().items()}
        # VmRSS counts the index's and the store's mapped pages (shared page cache that
        # grows with the files); RssAnon is the process's own memory.
        m["rss_parts_mib"] = {
            r: _rss_parts_mib(s.pid) for r, s in sampler.by_role().items() if r != "nats-server"
        }
        await nc.close()
    finally:
        if serve.returncode is None:
            serve.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(serve.wait(), 60)
            except TimeoutError:
                serve.kill()
                await serve.wait()
        log_fh.close()
    return m


def checks(m: dict[str, Any]) -> list[report.Check | report.Absolute]:
    seq = m["sequential"]
    out: list[report.Check | report.Absolute] = [
        report.Absolute("session_search p50", seq["session_search"]["latency_ms"]["p50"],
                        "ms", "max", SEARCH_P50_MS),
        report.Absolute("session_search p99", seq["session_search"]["latency_ms"]["p99"],
                        "ms", "max", SEARCH_P99_MS),
        report.Absolute("session_event_search p99",
                        seq["session_event_search"]["latency_ms"]["p99"], "ms", "max",
                        EVENT_SEARCH_P99_MS),
    ]  # fmt: skip
    for tool in EXACT_TOOLS:
        out.append(
            report.Absolute(
                f"{tool} p99", seq[tool]["latency_ms"]["p99"], "ms", "max", EXACT_P99_MS
            )
        )
    return out


def summary(m: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {
        "questions": ", ".join(f"{k} {v}" for k, v in sorted(m["questions"].items())),
        "asked in workspaces of (median events)": (
            f"{m['workspace_events_median']:,}"
            + (f" (the {m['largest_workspaces']} largest)" if m["largest_workspaces"] else "")
        ),
    }
    for tool, s in m["sequential"].items():
        lat = s["latency_ms"]
        cpu = ", ".join(f"{r} {v:.2f}" for r, v in sorted(s["cpu_ms_per_request"].items()))
        info[f"{tool} p50 / p99 ms (1 at a time)"] = (
            f"{lat['p50']:.1f} / {lat['p99']:.1f}; CPU ms/request: {cpu}; replies {s['replies']}"
            + f"; mean reply chars {s.get('mean_reply_chars', 0):,.0f}"
        )
        for kind, k in s.get("by_kind", {}).items():
            info[f"  {tool} {kind} p50 / p99 ms"] = f"{k['p50']:.1f} / {k['p99']:.1f}"
    for tool, p in m.get("parallel", {}).items():
        lat = p["latency_ms"]
        info[f"{tool} p50 / p99 ms ({m.get('lanes', '')} at once)"] = (
            f"{lat['p50']:.1f} / {lat['p99']:.1f}; {p['per_s']:.1f}/s; replies {p['replies']}"
        )
    info["load average before / after"] = (
        f"{m['loadavg_before'][0]:.1f} / {m['loadavg_after'][0]:.1f} (1 min)"
    )
    info["RSS MiB after"] = ", ".join(f"{r} {v:.0f}" for r, v in sorted(m["rss_mib"].items()))
    for role, parts in sorted(m.get("rss_parts_mib", {}).items()):
        info[f"  {role} MiB after"] = ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
    return info


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.archive_search", description=__doc__)
    parser.add_argument("--keep", type=Path, required=True, help="a kept bench.archive dir")
    parser.add_argument("--events", type=int, default=None, help="default: from the file name")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--searches", type=int, default=400)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--sample", type=int, default=4000, help="corpus events drawn from")
    parser.add_argument(
        "--largest", type=int, default=0, help="ask only in the N largest workspaces"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    sources = sorted(args.keep.glob(f"archive-*-{args.seed}.jsonl"))
    if not sources:
        parser.error(f"no archive-*-{args.seed}.jsonl in {args.keep}")
    source = sources[0]
    events = args.events or int(source.name.split("-")[1])
    m = asyncio.run(
        measure(
            args.keep / "home",
            source,
            events,
            searches=args.searches,
            parallel=args.parallel,
            sample=args.sample,
            seed=args.seed,
            largest=args.largest,
        )
    )
    params = {
        "events": events, "seed": args.seed, "searches": args.searches, "largest": args.largest,
    }  # fmt: skip
    result = report.result_dict("archive_search", params=params, checks=checks(m), measurements=m)
    title = f"archive searches: {events:,} events, {args.searches} questions per tool"
    print(report.format_table(title, report.checks_of(result), summary(m)))
    print(f"\nresult: {report.write_result(result)}")
    if args.check and not result["passed"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
