"""Replies are the same bytes whatever the layout (issue 19).

Over 400 lines: the layouts, their corpus and the byte comparison are one test.

One events stream of four partitions, two layouts over it: A, one worker holding every
partition; B, two workers holding 0-1 and 2-3. Each layout has its own tool prefix and
search queue (an all-partitions search consumer overlaps every shard's), and every request
is sent with the same request id to both. A request on the caller's partition answers the
same in A, in B and (in A) on the unpartitioned subject; a request on another partition
answers exactly as an unknown caller does — also when it asks to wait for its step — so a
wrong route tells nothing, whatever worker takes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator, Iterable, MutableMapping
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nats.aio.client import Client as NATS
from structlog.testing import capture_logs

from bench.report import layout_subjects
from contracts.client import NoWorkerError, SessionQueryClient
from contracts.errors import ErrorCode
from contracts.partitions import PartitionSet, partition_of, partition_of_cwd
from contracts.subjects import SERVICE_NAME, TOOL_NAMES, Subjects
from tests._events import routes_for
from tests._harness import config_for, until
from tests.hostile._harness import (
    A_CHILD,
    A_ROOT,
    A_SESSIONS,
    ALPHA,
    B_ROOT,
    B_SESSIONS,
    BETA,
    CALLER,
    MISSING,
    SessionLog,
    message_id,
    two_workspace_corpus,
)
from worker.commands.serve import serve
from worker.commands.status import format_status, partition_map
from worker.replica.ingest_consumer import ensure_events_stream
from worker.serving.search_queue import CONSUMER_IDLE_S, OverlappingShards
from worker.tools import ToolConfig
from worker.transport.connection import NatsOptions
from worker.worker import Worker

COUNT: Final = 4
GAMMA: Final = "/work/gamma"  # shares beta's partition
DELTA: Final = "/srv/delta"
CJK: Final = "/home/dev/项目"
# The module's event loop, where the layouts are built once for the tests that share them.
in_module_loop = pytest.mark.asyncio(loop_scope="module")
# Each workspace's partition of four, fixed by the documented key and hash.
PARTITIONS: Final = {ALPHA: 0, BETA: 3, GAMMA: 3, DELTA: 2, CJK: 1, None: 1}
G_CALLER: Final = "s-g-caller"
D_CALLER: Final = "s-d-caller"
C_CALLER: Final = "s-c-caller"
N_CALLER: Final = "s-n-caller"  # no cwd
Stored = list[tuple[int, int]]  # (stream seq, partition) of each published event
CALLERS: Final = {
    CALLER: ALPHA,
    B_ROOT: BETA,
    G_CALLER: GAMMA,
    D_CALLER: DELTA,
    C_CALLER: CJK,
    N_CALLER: None,
}


def _more_workspaces() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for session, cwd, words in (
        (G_CALLER, GAMMA, "gamma ledger zebrafish, next to beta"),
        (D_CALLER, DELTA, "delta ledger zebrafish on the server"),
        (C_CALLER, CJK, "项目 ledger zebrafish 東京"),
        (N_CALLER, None, "a session with no cwd, ledger zebrafish"),
    ):
        log = SessionLog(session, cwd)
        log.title(f"{session} title")
        log.say(words)
        events.extend(log.events)
    return events


def _requests(caller: str) -> list[tuple[str, dict[str, Any]]]:
    """One request of every tool, over what the caller's workspace holds (and what it
    does not)."""
    own = A_ROOT if caller == CALLER else caller
    return [
        ("session_search", {"query": "zebrafish ledger"}),
        ("session_event_search", {"query": "ledger"}),
        ("session_trace", {"session_id": own}),
        ("session_trace", {"session_id": A_CHILD}),
        ("session_event_trace", {"session_id": own, "seq": 2}),
        ("session_event_read", {"session_id": own, "seq": 2}),
        ("session_event_read", {"session_id": B_ROOT, "seq": 3}),
    ]


def _body(request_id: str, caller: str, arguments: dict[str, Any], step: int | None) -> bytes:
    execution: dict[str, Any] = {"agent": {"session_id": caller}}
    if step is not None:
        execution["step_start_seq"] = step
    return orjson.dumps({"request_id": request_id, "execution": execution, "arguments": arguments})


@dataclasses.dataclass
class Layout:
    subjects: Subjects
    workers: list[Worker]

    async def ask(
        self,
        nc: NATS,
        tool: str,
        partition: int | None,
        caller: str,
        arguments: dict[str, Any],
        step: int | None = None,
    ) -> bytes:
        """The reply's bytes, its request id written ``<id>``: a worker refuses an id it
        has seen, so each request has its own."""
        request_id = "r-" + uuid.uuid4().hex[:16]
        msg = await nc.request(
            self.subjects.tool(tool, partition),
            _body(request_id, caller, arguments, step),
            timeout=20,
        )
        return bytes(msg.data).replace(request_id.encode(), b"<id>")


async def _start(
    nc: NATS, subjects: Subjects, tmp_path: Path, sets: Iterable[str], stored: Stored
) -> Layout:
    layout = Layout(subjects, [])
    for held in sets:
        config = config_for(
            subjects,
            tmp_path,
            partitions=held,
            spill_threshold_bytes=512 * 1024,
            tools=ToolConfig(catch_up_timeout_ms=300),
        )
        layout.workers.append(await Worker.start(nc, config))
    for held, worker in zip(sets, layout.workers, strict=True):
        # A shard's index holds only its partitions' events: it is through the last of those.
        members = PartitionSet.parse(held, COUNT)
        last = max(seq for seq, partition in stored if partition in members)

        async def caught_up(worker: Worker = worker, last: int = last) -> bool:
            return (await worker.indexed_through() or 0) >= last

        await until(caught_up, within=30)
    return layout


@pytest.fixture
def nc(module_nc: NATS) -> NATS:
    """The module's connection: its tests run in the module's loop, beside the layouts."""
    return module_nc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def layouts(
    module_nc: NATS, module_subjects: Subjects, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Layout, Layout]]:
    """Both layouts, built once for the module: its tests only read them (each request has
    its own id), on prefixes no other test uses."""
    nc, subjects, tmp_path = module_nc, module_subjects, tmp_path_factory.mktemp("layouts")
    js = nc.jetstream()
    await ensure_events_stream(js, subjects, partitions=COUNT)
    routes = routes_for(subjects)
    stored: Stored = []
    for ev in (*two_workspace_corpus().events, *_more_workspaces()):
        subject = routes.subject(ev)
        ack = await js.publish(subject, orjson.dumps(ev), headers={"Nats-Msg-Id": message_id(ev)})
        stored.append((ack.seq, partition_of(subject.split(".")[-2], COUNT)))
    one = await _start(nc, layout_subjects(subjects, "a"), tmp_path, ["all"], stored)
    try:
        two = await _start(nc, layout_subjects(subjects, "b"), tmp_path, ["0-1", "2-3"], stored)
        try:
            yield one, two
        finally:
            for worker in two.workers:
                await worker.stop()
    finally:
        for worker in one.workers:
            await worker.stop()


def test_the_workspaces_partitions_are_the_documented_ones() -> None:
    for cwd, partition in PARTITIONS.items():
        assert partition_of_cwd(cwd, COUNT) == partition, cwd


@in_module_loop
async def test_every_reply_is_the_same_bytes_in_either_layout(
    nc: NATS, layouts: tuple[Layout, Layout]
) -> None:
    one, two = layouts
    served: dict[str, str] = {}
    for caller, cwd in CALLERS.items():
        home = PARTITIONS[cwd]
        for tool, arguments in _requests(caller):
            answered = await one.ask(nc, tool, home, caller, arguments)
            assert await two.ask(nc, tool, home, caller, arguments) == answered, (caller, tool)
            assert await one.ask(nc, tool, None, caller, arguments) == answered, (caller, tool)
            reply = orjson.loads(answered)
            if "error" in reply:
                assert reply["error"]["code"] == ErrorCode.NOT_FOUND.value, reply
            else:
                served[f"{caller} {tool} {arguments}"] = reply["content"]
            # The unknown caller's reply, naming this caller where it names one.
            unknown = await one.ask(nc, tool, home, MISSING, arguments)
            expected = unknown.replace(MISSING.encode(), caller.encode())
            for elsewhere in set(range(COUNT)) - {home}:
                for layout in (one, two):
                    wrong = await layout.ask(nc, tool, elsewhere, caller, arguments)
                    assert wrong == expected, (caller, tool, elsewhere)
    # Every caller was answered from its own workspace (the comparisons above are of
    # real pages, not of errors alike).
    assert len(served) >= 4 * len(CALLERS)
    assert A_ROOT in served[f"{CALLER} session_search {{'query': 'zebrafish ledger'}}"]
    assert all(B_ROOT not in text for key, text in served.items() if key.startswith(CALLER))


@in_module_loop
async def test_a_wrong_partition_that_waits_for_its_step_times_out_like_an_unknown_caller(
    nc: NATS, layouts: tuple[Layout, Layout]
) -> None:
    one, two = layouts
    arguments = {"session_id": CALLER, "seq": 2}
    home = PARTITIONS[ALPHA]
    # Held, but the step is not indexed yet: the wait runs out.
    lagging = await one.ask(nc, "session_event_read", home, CALLER, arguments, 99)
    assert orjson.loads(lagging)["error"]["code"] == ErrorCode.TIMEOUT.value
    assert await one.ask(nc, "session_event_read", home, MISSING, arguments, 99) == lagging
    for layout in (one, two):
        for elsewhere in set(range(COUNT)) - {home}:
            wrong = await layout.ask(nc, "session_event_read", elsewhere, CALLER, arguments, 99)
            assert wrong == lagging, (layout.subjects.prefix, elsewhere)


def _bound_reached(logs: Iterable[MutableMapping[str, Any]]) -> int:
    """How many read-your-writes waits ran out their bound."""
    return sum(1 for e in logs if e["event"] == "catch-up bound reached")


@in_module_loop
async def test_a_wrong_partition_waits_out_the_same_bound_as_an_unknown_caller(
    nc: NATS, layouts: tuple[Layout, Layout]
) -> None:
    """The caller's step IS indexed here (step 2: seq 1 is held), so only the route is
    wrong. Its request goes through the same wait as a caller no index holds: the wait
    runs out its bound (counted by the line that says so, not by a clock) and the reply is
    the same bytes. The partition was once checked after the wait, which answered such a
    caller at once: the same bytes, sooner, so the time told the route. Without a step
    neither waits."""
    one, two = layouts
    home = PARTITIONS[ALPHA]
    requests: list[tuple[str, dict[str, Any]]] = [
        ("session_event_read", {"session_id": CALLER, "seq": 2}),
        ("session_search", {"query": "zebrafish ledger"}),
    ]
    for tool, arguments in requests:
        held = orjson.loads(await one.ask(nc, tool, home, CALLER, arguments, 2))
        assert "error" not in held, (tool, held)
        with capture_logs() as logs:
            unknown = await one.ask(nc, tool, home, NEVER_CALLED, arguments, 2)
        assert orjson.loads(unknown)["error"]["code"] == ErrorCode.TIMEOUT.value
        assert _bound_reached(logs) == 1, tool
        for layout in (one, two):
            for elsewhere in sorted(set(range(COUNT)) - {home}):
                with capture_logs() as logs:
                    wrong = await layout.ask(nc, tool, elsewhere, CALLER, arguments, 2)
                    no_step = await layout.ask(nc, tool, elsewhere, CALLER, arguments)
                where = (tool, layout.subjects.prefix, elsewhere)
                assert wrong == unknown, where
                assert _bound_reached(logs) == 1, where
                assert orjson.loads(no_step)["error"]["code"] == ErrorCode.NO_IDENTITY.value


@in_module_loop
async def test_shards_that_overlap_are_refused_and_replicas_of_a_shard_share_its_queue(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    await ensure_events_stream(nc.jetstream(), subjects, partitions=COUNT)
    first = await Worker.start(nc, config_for(subjects, tmp_path, partitions="0-1"))
    try:
        assert first.service is not None
        info = orjson.loads(
            (await nc.request(f"$SRV.INFO.{SERVICE_NAME}.{first.service.id}", b"")).data
        )
        assert info["metadata"]["partitions"] == "0-1"
        assert info["metadata"]["partition_count"] == str(COUNT)
        tools = {e["subject"]: e["metadata"] for e in info["endpoints"] if "tool." in e["subject"]}
        assert set(tools) == {subjects.tool(t, k) for t in TOOL_NAMES for k in (0, 1)}
        assert tools[subjects.tool("session_trace", 1)]["partition"] == "1"
        replica = await Worker.start(nc, config_for(subjects, tmp_path, partitions="0-1"))
        await replica.stop()
        with pytest.raises(OverlappingShards, match="partitions"):
            await Worker.start(nc, config_for(subjects, tmp_path, partitions="1-2"))
    finally:
        await first.stop()


@in_module_loop
async def test_serve_refuses_an_overlapping_set_in_one_line_saying_what_to_do(
    nc: NATS,
    nats_url: str,
    subjects: Subjects,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not the 78-line traceback serve once printed: exit 1 and one line that names the
    consumer in the way, its partitions, the rule and the remedy."""
    await ensure_events_stream(nc.jetstream(), subjects, partitions=COUNT)
    first = await Worker.start(nc, config_for(subjects, tmp_path, partitions="0-1"))
    try:
        for held in ("1-2", "all"):
            config = config_for(subjects, tmp_path, partitions=held)
            code = await serve(config, NatsOptions(url=nats_url), stop=asyncio.Event())
            err = capsys.readouterr().err
            assert code == 1, held
            assert "Traceback" not in err
            (line,) = [ln for ln in err.splitlines() if ln.startswith("sessionquery serve:")]
            consumer = f"{subjects.search_consumer}-p0-1"
            assert (
                f"--partitions {held} overlaps search consumer {consumer} (partitions 0-1)" in line
            )
            assert "same set or a disjoint one" in line
            assert f"nats consumer rm {subjects.search_stream} {consumer}" in line
    finally:
        await first.stop()


@in_module_loop
async def test_an_index_of_other_partitions_is_rebuilt_for_the_worker_s_set(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects, partitions=COUNT)
    routes = routes_for(subjects)
    # Alpha (partition 0) has the stream's last event: the shard's index is through it,
    # and would skip beta's events before it if it were not rebuilt for every partition.
    late = SessionLog("s-a-late", ALPHA)
    late.say("the last word")
    last = 0
    for ev in (*two_workspace_corpus().events, *late.events):
        ack = await js.publish(routes.subject(ev), orjson.dumps(ev))
        last = ack.seq
    db_path = tmp_path / "index.sqlite"
    shard = await Worker.start(nc, config_for(subjects, tmp_path, db_path=db_path, partitions="0"))
    try:

        async def through_alpha() -> bool:
            return (await shard.indexed_through() or 0) >= last

        await until(through_alpha, within=30)
    finally:
        await shard.stop()
    # The shard's search consumer outlives it until the server removes it idle; an
    # operator changing the layout sooner deletes it.
    queue = await js.consumer_info(subjects.search_stream, f"{subjects.search_consumer}-p0")
    assert queue.config.inactive_threshold == CONSUMER_IDLE_S
    await js.delete_consumer(subjects.search_stream, f"{subjects.search_consumer}-p0")
    whole = await Worker.start(nc, config_for(subjects, tmp_path, db_path=db_path))
    try:

        async def through_all() -> bool:
            return (await whole.indexed_through() or 0) >= last

        await until(through_all, within=30)
        layout = Layout(subjects, [whole])
        found = orjson.loads(
            await layout.ask(nc, "session_trace", None, B_ROOT, {"session_id": B_ROOT})
        )
    finally:
        await whole.stop()
    assert "error" not in found and B_ROOT in found["content"]


@in_module_loop
async def test_status_shows_the_partition_map(nc: NATS, layouts: tuple[Layout, Layout]) -> None:
    one, two = layouts
    shards = await partition_map(nc, two.subjects.prefix)
    assert [(w["partitions"], w["partition_count"]) for w in shards] == [
        ("0-1", str(COUNT)),
        ("2-3", str(COUNT)),
    ]
    for w, worker in zip(shards, two.workers, strict=True):
        assert worker.service is not None and w["id"] == worker.service.id
        assert w["applied_seq"] == await worker.indexed_through() and w["lag_events"] == 0
        # Caught up through its own partitions' last event, which for one of the two sits
        # below the stream's last seq: lag 0 all the same (documented in operations.md).
        assert w["held_last_seq"] == w["applied_seq"]
        assert w["joined"]["how"] == "replay"
    last = (await nc.jetstream().stream_info(two.subjects.events_stream)).state.last_seq
    assert min(w["applied_seq"] for w in shards) < last
    (whole,) = await partition_map(nc, one.subjects.prefix)
    assert whole["partitions"] == "all" and whole["held_last_seq"] == last
    lines = format_status({"index": "x", "exists": False, "workers": shards})
    assert any(f"partitions 0-1 of {COUNT}, applied seq" in line for line in lines)
    assert any("joined: replayed the stream from its start" in line for line in lines)


@in_module_loop
async def test_the_client_routes_by_the_caller_s_cwd(
    nc: NATS, layouts: tuple[Layout, Layout]
) -> None:
    one, two = layouts
    whole = SessionQueryClient(nc, one.subjects)
    shards = SessionQueryClient(nc, two.subjects)
    for caller, cwd in CALLERS.items():
        execution = {"agent": {"session_id": caller}}
        for n, (tool, arguments) in enumerate(_requests(caller)):
            request_id = f"r-client-{caller}-{n}"
            routed = await shards.call(tool, arguments, execution, request_id=request_id, cwd=cwd)
            assert routed == await whole.call(tool, arguments, execution, request_id=request_id)
    assert await shards.partition_count() == COUNT
    # No worker of layout B holds every partition: the unpartitioned subject has none.
    with pytest.raises(NoWorkerError):
        await shards.call("session_trace", {}, {"agent": {"session_id": CALLER}})


NEVER_CALLED: Final = "s-never-a-caller"
_SESSIONS = st.sampled_from([*A_SESSIONS, *B_SESSIONS, *CALLERS, MISSING])
_WORDS = st.sampled_from(
    ["zebrafish", "ledger", "東京", "crème", "RefundLedger.apply", "rf_1001", "项目", "refund",
     "webhook retry", "AssertionError", "huckleberry", "obsidiancanary", "no such word"]
)  # fmt: skip
_SEQ = st.integers(1, 6)
_REQUEST = st.one_of(
    st.tuples(
        st.just("session_search"),
        st.fixed_dictionaries(
            {"query": _WORDS},
            optional={
                "session_ids": st.lists(_SESSIONS, min_size=1, max_size=3),
                "availability": st.lists(st.sampled_from(["live", "ended"]), min_size=1),
            },
        ),
    ),
    st.tuples(
        st.just("session_event_search"),
        st.fixed_dictionaries({"query": _WORDS}, optional={"session_id": _SESSIONS}),
    ),
    st.tuples(st.just("session_trace"), st.fixed_dictionaries({"session_id": _SESSIONS})),
    st.tuples(
        st.just("session_event_trace"),
        st.fixed_dictionaries({"session_id": _SESSIONS, "seq": _SEQ}),
    ),
    st.tuples(
        st.just("session_event_read"),
        st.fixed_dictionaries(
            {"session_id": _SESSIONS, "seq": _SEQ},
            optional={"before": st.integers(0, 3), "after": st.integers(0, 3)},
        ),
    ),
)


@in_module_loop
@settings(
    max_examples=60,
    deadline=None,
    # The layouts are built once per module and only read: every example may share them.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(caller=st.sampled_from(list(CALLERS)), request=_REQUEST)
async def test_any_request_answers_the_same_in_either_layout(
    nc: NATS, layouts: tuple[Layout, Layout], caller: str, request: tuple[str, dict[str, Any]]
) -> None:
    one, two = layouts
    tool, arguments = request
    home = PARTITIONS[CALLERS[caller]]
    answered = await one.ask(nc, tool, home, caller, arguments)
    assert await two.ask(nc, tool, home, caller, arguments) == answered
    assert await one.ask(nc, tool, None, caller, arguments) == answered
    # On another partition: the reply of a caller no index holds (whose id appears in no
    # argument), naming this caller where it names one.
    unknown = await one.ask(nc, tool, home, NEVER_CALLED, arguments)
    expected = unknown.replace(NEVER_CALLED.encode(), caller.encode())
    for elsewhere in set(range(COUNT)) - {home}:
        assert await two.ask(nc, tool, elsewhere, caller, arguments) == expected


@in_module_loop
async def test_a_shard_of_partition_0_resumes_its_own_index(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    """The index records its set as text in a column of numeric affinity: "0" reads back
    as the integer 0, which once read as no set at all ("all"), so the shard of partition 0
    found its own index diverged after every restart."""
    js = nc.jetstream()
    await ensure_events_stream(js, subjects, partitions=COUNT)
    routes = routes_for(subjects)
    alpha = SessionLog("s-a-zero", ALPHA)
    alpha.say("the first word")
    for ev in alpha.events:
        await js.publish(routes.subject(ev), orjson.dumps(ev))
    db_path = tmp_path / "index.sqlite"
    for _ in range(2):
        with capture_logs() as logs:
            shard = await Worker.start(
                nc, config_for(subjects, tmp_path, db_path=db_path, partitions="0")
            )
            try:
                last = (await js.stream_info(subjects.events_stream)).state.last_seq

                async def through(shard: Worker = shard, last: int = last) -> bool:
                    return (await shard.indexed_through() or 0) >= last

                await until(through, within=30)
            finally:
                await shard.stop()
        assert not [e for e in logs if "holds partitions" in str(e.get("reason", e["event"]))]
        alpha.say("another word")
        await js.publish(routes.subject(alpha.events[-1]), orjson.dumps(alpha.events[-1]))
