"""NATS permissions on the local cluster (deploy/nats-accounts.conf): a runtime user works
as a requester, and the server refuses its subscriptions to other callers' tool requests,
to the event stream's subjects and to other inboxes."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError

from contracts.client import SessionQueryClient
from contracts.envelope import AgentIdentity, Execution
from deploy.local_cluster import CorpusSize, LocalCluster
from tests._events import event, subject_of
from tests._harness import until


@dataclass
class Cluster:
    nodes: LocalCluster
    caller: str  # a session of the seeded corpus


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = LocalCluster(
        workdir=tmp_path_factory.mktemp("perm-cluster"),
        workers=1,
        # Small spill threshold: a search result spills, so reading it is exercised too.
        worker_env={
            "SESSIONQUERY_SPILL_THRESHOLD_BYTES": "2048",
            "SESSIONQUERY_SPILL_PREVIEW_BYTES": "512",
        },
    )
    nodes.start()
    try:
        corpus, last_seq = nodes.seed(CorpusSize(sessions=12, events=12, workspaces=2))
        nodes.wait_indexed(last_seq, timeout=60)
        caller = next(line for line in corpus.read_text().splitlines() if "session/start" in line)
        found = re.search(r'"session_id":"([^"]+)"', caller)
        assert found is not None
        yield Cluster(nodes=nodes, caller=found.group(1))
    finally:
        nodes.stop()


async def _runtime(cluster: Cluster, errors: list[str]) -> NATS:
    async def on_error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    return await nats.connect(
        cluster.nodes.urls,
        error_cb=on_error,
        connect_timeout=5,
        max_reconnect_attempts=5,
        **cluster.nodes.connect_options("runtime"),
    )


async def test_a_runtime_cannot_subscribe_to_tool_requests_events_or_other_inboxes(
    cluster: Cluster,
) -> None:
    errors: list[str] = []
    spy = await _runtime(cluster, errors)
    seen: list[bytes] = []

    async def keep(msg: Any) -> None:
        seen.append(msg.data)

    try:
        for subject in ("sessionquery.tool.>", "sessions.events.>", "_INBOX.>"):
            await spy.subscribe(subject, cb=keep)
            await spy.flush()
            expected = f'permissions violation for subscription to "{subject.lower()}"'

            def refused(expected: str = expected) -> bool:
                return any(expected in e for e in errors)

            await until(refused, within=10)
        # Another caller's tool request (made as the worker user here) never reaches it.
        other = await nats.connect(cluster.nodes.urls, **cluster.nodes.connect_options("worker"))
        try:
            reply = await SessionQueryClient(other).call(
                "session_trace",
                {},
                Execution(agent=AgentIdentity(session_id=cluster.caller)),
                timeout=30,
            )
            assert reply.status == "ok"
        finally:
            await other.close()
        await asyncio.sleep(0.2)
        assert seen == []
    finally:
        await spy.close()


async def test_a_runtime_calls_tools_publishes_events_and_reads_its_spill(
    cluster: Cluster,
) -> None:
    errors: list[str] = []
    nc = await _runtime(cluster, errors)
    try:
        subjects = cluster.nodes.subjects
        client = SessionQueryClient(nc, subjects)
        agent = AgentIdentity(session_id=cluster.caller)
        reply = await client.call(
            "session_search", {"query": "test"}, Execution(agent=agent), timeout=30
        )
        assert reply.status == "ok", reply.error
        assert reply.spill is not None  # over the 2 KiB threshold
        text = (await client.fetch_spilled(reply.spill)).decode()
        # The preview is whole lines, the last maybe cut with its marker (protocol §5.3).
        assert reply.content is not None
        preview = re.sub(r" \[… line cut: \d+ more characters\]\n$", "", reply.content)
        assert len(preview) > 100 and text.startswith(preview)
        await client.cancel("r-not-running", "nothing to stop", agent=agent)
        ack = await nc.jetstream().publish(
            subject_of(subjects, "s-perm-new", "/ws/perm"),
            event(
                "s-perm-new",
                1,
                "session/start",
                event_id="e-perm-1",
                surface="system",
                time="2026-12-03T10:00:00.000Z",
                payload={"cwd": "/ws/perm"},
            ),
        )
        assert ack.stream == subjects.events_stream
    finally:
        await nc.close()
    assert not any("violation" in e for e in errors), errors


async def test_a_wrong_password_is_refused(cluster: Cluster) -> None:
    options = {**cluster.nodes.connect_options("runtime"), "password": "not-the-password"}
    with pytest.raises((NatsError, OSError)):
        await nats.connect(
            cluster.nodes.urls, connect_timeout=3, max_reconnect_attempts=0, allow_reconnect=False,
            **options,
        )  # fmt: skip
