"""The requester helper routes by the caller's cwd (docs/protocol.md §10.4), over a real
nats-server and real workers.

One events stream of the default 16 partitions holds two workspaces: ``/work/a`` (key
``d7f9747246691548``, partition 10: the documented vector) and ``/work/b`` (partition 9).
Two deployments read it under their own tool prefixes: a shard holding only partition 10,
and a worker holding every partition. The client computes the subject from the cwd alone,
learning the count once from the manifest.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any, Final

import orjson
import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from bench.report import layout_subjects
from contracts.client import (
    ROUTING_NEEDS_MANIFEST,
    UNROUTED,
    NoWorkerError,
    SessionQueryClient,
    SessionQueryClientError,
)
from contracts.errors import ErrorCode
from contracts.partitions import (
    DEFAULT_PARTITION_COUNT,
    NO_CWD_KEY,
    partition_of,
    partition_of_cwd,
    workspace_key,
)
from contracts.subjects import Subjects
from tests._events import event
from tests._harness import config_for, until
from worker.commands.call import add_call_arguments, route_of
from worker.replica.ingest_consumer import ensure_events_stream
from worker.worker import Worker

HOME: Final = "/work/a"  # the documented vector: key d7f9747246691548, partition 10 of 16
HOME_KEY: Final = "d7f9747246691548"
HOME_PARTITION: Final = 10
OTHER: Final = "/work/b"  # partition 9 of 16
CALLER: Final = "s-route-a"
FOREIGN: Final = "s-route-b"
MISSING: Final = "s-route-missing"
# The module's event loop, where the deployments are built once for the tests that share them.
in_module_loop = pytest.mark.asyncio(loop_scope="module")


def _requests() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("session_search", {"query": "hello"}),
        ("session_event_search", {"query": "hello"}),
        ("session_trace", {"session_id": CALLER}),
        ("session_event_trace", {"session_id": CALLER, "seq": 2}),
        ("session_event_read", {"session_id": CALLER, "seq": 2}),
        ("session_event_read", {"session_id": FOREIGN, "seq": 2}),  # another workspace's
    ]


@dataclasses.dataclass
class Deployments:
    shard: Subjects  # one worker holding only partition 10
    whole: Subjects  # one worker holding every partition


@pytest.fixture
def nc(module_nc: NATS) -> NATS:
    """The module's connection: its tests run in the module's loop, beside the workers."""
    return module_nc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def deployments(
    module_nc: NATS, module_subjects: Subjects, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Deployments]:
    """Both deployments, once for the module: its tests only ask them (fresh request ids),
    on names no other test uses."""
    nc, subjects, tmp_path = module_nc, module_subjects, tmp_path_factory.mktemp("deployments")
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    last: dict[int, int] = {}
    for session, cwd in ((CALLER, HOME), (FOREIGN, OTHER)):
        key = workspace_key(cwd)
        for data in (
            event(session, 1, "session/start", payload={"cwd": cwd}),
            event(session, 2),
        ):
            ack = await js.publish(subjects.events(key, session), data)
            last[partition_of(key, DEFAULT_PARTITION_COUNT)] = ack.seq
    shard, whole = layout_subjects(subjects, "shard"), layout_subjects(subjects, "whole")
    workers = [
        await Worker.start(nc, config_for(shard, tmp_path, partitions=str(HOME_PARTITION))),
        await Worker.start(nc, config_for(whole, tmp_path)),
    ]
    try:
        for worker, through in zip(
            workers, (last[HOME_PARTITION], max(last.values())), strict=True
        ):

            async def caught_up(worker: Worker = worker, through: int = through) -> bool:
                return (await worker.indexed_through() or 0) >= through

            await until(caught_up, within=30)
        yield Deployments(shard=shard, whole=whole)
    finally:
        for worker in workers:
            await worker.stop()


async def _raw(nc: NATS, subject: str, caller: str, arguments: dict[str, Any]) -> bytes:
    """A reply's bytes, its (fresh) request id written ``<id>``."""
    request_id = "r-" + uuid.uuid4().hex[:16]
    body = {"request_id": request_id, "execution": {"agent": {"session_id": caller}},
            "arguments": arguments}  # fmt: skip
    msg = await nc.request(subject, orjson.dumps(body), timeout=20)
    return bytes(msg.data).replace(request_id.encode(), b"<id>")


def test_the_documented_vector() -> None:
    assert workspace_key(HOME) == HOME_KEY
    assert partition_of_cwd(HOME, DEFAULT_PARTITION_COUNT) == HOME_PARTITION
    assert partition_of_cwd(OTHER, DEFAULT_PARTITION_COUNT) != HOME_PARTITION


@in_module_loop
async def test_the_client_computes_the_documented_subject(
    nc: NATS, deployments: Deployments
) -> None:
    client = SessionQueryClient(nc, deployments.shard)
    prefix = deployments.shard.prefix
    assert await client.partition_count() == DEFAULT_PARTITION_COUNT
    assert await client.tool_subject("session_search", HOME) == (
        f"{prefix}.tool.session_search.p{HOME_PARTITION}"
    )
    no_cwd = partition_of(NO_CWD_KEY, DEFAULT_PARTITION_COUNT)
    assert (
        await client.tool_subject("session_trace", None) == f"{prefix}.tool.session_trace.p{no_cwd}"
    )
    assert await client.tool_subject("session_trace") == f"{prefix}.tool.session_trace"
    assert await client.tool_subject("session_trace", UNROUTED) == f"{prefix}.tool.session_trace"


@in_module_loop
async def test_a_routed_call_reaches_the_shard_and_answers_as_the_whole_worker(
    nc: NATS, deployments: Deployments
) -> None:
    """Routed by cwd, a request reaches a worker holding only the caller's partition; its
    reply is the same bytes as the unpartitioned subject's on a worker of every partition."""
    routed = SessionQueryClient(nc, deployments.shard)
    whole = SessionQueryClient(nc, deployments.whole)
    execution = {"agent": {"session_id": CALLER}}
    codes: list[str | None] = []
    for n, (tool, arguments) in enumerate(_requests()):
        subject = await routed.tool_subject(tool, HOME)
        unpartitioned = deployments.whole.tool(tool)
        answered = await _raw(nc, subject, CALLER, arguments)
        assert answered == await _raw(nc, unpartitioned, CALLER, arguments), (tool, arguments)
        # The same through call(): one request id, sent to either deployment.
        request_id = f"r-routed-{n}-{uuid.uuid4().hex[:8]}"
        reply = await routed.call(tool, arguments, execution, request_id=request_id, cwd=HOME)
        assert reply == await whole.call(tool, arguments, execution, request_id=request_id)
        codes.append(reply.error.code if reply.error else None)
    # Real pages were compared, and the other workspace's id is not found.
    assert codes == [None, None, None, None, None, ErrorCode.NOT_FOUND]
    # The shard holds no unpartitioned subject.
    with pytest.raises(NoWorkerError):
        await routed.call("session_trace", {"session_id": CALLER}, execution)


@in_module_loop
async def test_a_wrong_cwd_answers_as_an_unknown_session(
    nc: NATS, deployments: Deployments
) -> None:
    """On a worker that holds the wrong partition too, the caller routed by another
    directory's cwd reads exactly as an unknown session on its own partition."""
    client = SessionQueryClient(nc, deployments.whole)
    for tool, arguments in _requests():
        wrong = await _raw(nc, await client.tool_subject(tool, OTHER), CALLER, arguments)
        unknown = await _raw(nc, await client.tool_subject(tool, HOME), MISSING, arguments)
        assert wrong == unknown.replace(MISSING.encode(), CALLER.encode()), tool
        assert orjson.loads(wrong)["error"]["code"] == ErrorCode.NO_IDENTITY.value
    # Through call() as well: the reply, not an exception.
    reply = await client.call(
        "session_trace", {"session_id": CALLER}, {"agent": {"session_id": CALLER}}, cwd=OTHER
    )
    assert reply.error is not None and reply.error.code == ErrorCode.NO_IDENTITY
    # A shard that lacks the wrong partition has no responder there at all.
    shard = SessionQueryClient(nc, deployments.shard)
    with pytest.raises(NoWorkerError, match=rf"\.p{partition_of_cwd(OTHER, 16)}$"):
        await shard.call("session_trace", {}, {"agent": {"session_id": CALLER}}, cwd=OTHER)


async def _manifest_reads(nc: NATS, subjects: Subjects) -> list[Msg]:
    """Every manifest request from now on (a listener beside the workers; it never replies)."""
    seen: list[Msg] = []

    async def record(msg: Msg) -> None:
        seen.append(msg)

    await nc.subscribe(subjects.manifest, cb=record)
    await nc.flush()
    return seen


@in_module_loop
async def test_the_count_is_read_once_per_client(nc: NATS, deployments: Deployments) -> None:
    seen = await _manifest_reads(nc, deployments.shard)
    client = SessionQueryClient(nc, deployments.shard)
    execution = {"agent": {"session_id": CALLER}}
    arguments = {"session_id": CALLER}
    # Concurrent first calls share one read.
    replies = await asyncio.gather(
        *(client.call("session_trace", arguments, execution, cwd=HOME) for _ in range(5))
    )
    assert all(r.error is None for r in replies)
    await client.call("session_trace", arguments, execution, cwd=HOME)
    await nc.flush()
    assert len(seen) == 1
    # A client that read the manifest (as the MCP bridge does at start) reads it no more.
    seeded = SessionQueryClient(nc, deployments.shard)
    await seeded.manifest()
    await seeded.call("session_trace", arguments, execution, cwd=HOME)
    await nc.flush()
    assert len(seen) == 2


@in_module_loop
async def test_a_manifest_that_cannot_be_read_is_a_clear_error(
    nc: NATS, subjects: Subjects
) -> None:
    alone = layout_subjects(subjects, "nobody")
    client = SessionQueryClient(nc, alone)
    execution = {"agent": {"session_id": CALLER}}
    with pytest.raises(NoWorkerError, match=ROUTING_NEEDS_MANIFEST) as raised:
        await client.call("session_trace", {}, execution, cwd=HOME)
    assert alone.manifest in str(raised.value)
    # A protocol-1 worker's manifest has no partition_count: refused, and not kept.
    manifest: dict[str, Any] = {"tools": []}

    async def old_worker(msg: Msg) -> None:
        await msg.respond(orjson.dumps(manifest))

    sub = await nc.subscribe(alone.manifest, cb=old_worker)
    try:
        with pytest.raises(SessionQueryClientError, match="predates protocol 2"):
            await client.call("session_trace", {}, execution, cwd=HOME)
        manifest["partition_count"] = 16
        assert await client.tool_subject("session_trace", HOME) == alone.tool(
            "session_trace", HOME_PARTITION
        )
    finally:
        await sub.unsubscribe()


@pytest.mark.parametrize(
    ("argv", "route"),
    [
        ([], UNROUTED),
        (["--cwd", HOME], HOME),
        (["--cwd", ""], ""),  # an empty cwd is a cwd (its own key), not "unknown"
        (["--no-cwd"], None),
    ],
)
def test_sessionquery_call_routes_its_cwd_verbatim(argv: list[str], route: object) -> None:
    parser = argparse.ArgumentParser()
    add_call_arguments(parser)
    args = parser.parse_args(["session_trace", "--session", CALLER, *argv, "{}"])
    assert route_of(args) == route
