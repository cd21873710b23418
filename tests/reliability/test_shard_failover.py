"""A sharded cluster under load loses one worker of a shard and one NATS node (issue 19).

Three clustered nats-servers (R3 streams), 16 partitions over four workers, each partition
on two (``0-7`` twice, ``8-15`` twice), snapshots published as events arrive. While the
load generator (routing each caller by its cwd) and ingestion run, one replica of ``0-7``
and one node are SIGKILLed. Then: every workspace still answers, on its own partition;
each surviving index holds exactly its partitions' events of the stream; and a fresh
worker for ``0-7`` joins from a snapshot and catches up.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nats
import pytest

from bench import corpus
from contracts.client import SessionQueryClient
from contracts.partitions import PartitionSet
from deploy.local_cluster import CorpusSize, LocalCluster

SHARDS = ("0-7", "0-7", "8-15", "8-15")
COUNT = 16


def _indexed_events(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])


async def _stream_counts(cluster: LocalCluster) -> dict[int, int]:
    """Stored events per partition (the partition is the stored subject's first token)."""
    nc = await nats.connect(cluster.urls, **cluster.connect_options())
    try:
        prefix = cluster.subjects.events_prefix
        info = await nc.jetstream().stream_info(
            cluster.subjects.events_stream, subjects_filter=f"{prefix}.>"
        )
        counts: dict[int, int] = {}
        for subject, n in (info.state.subjects or {}).items():
            k = int(subject[len(prefix) + 1 :].split(".")[0])
            counts[k] = counts.get(k, 0) + n
        return counts
    finally:
        await nc.close()


async def _every_workspace_answers(
    cluster: LocalCluster, sidecar: Path, urls: list[str]
) -> dict[str, str]:
    """One caller per workspace, routed by its cwd: the reply's status by cwd."""
    _, plans = corpus.load_sidecar(sidecar)
    callers = {plan.cwd: plan.session_id for plan in plans}
    nc = await nats.connect(urls, **cluster.connect_options("runtime"))
    try:
        client = SessionQueryClient(nc, cluster.subjects)
        status: dict[str, str] = {}
        for cwd, session in callers.items():
            execution = {"agent": {"session_id": session}}
            reply = await client.call("session_search", {"query": "test"}, execution, cwd=cwd)
            status[cwd] = reply.status
        return status
    finally:
        await nc.close()


@pytest.mark.slow
def test_a_shard_keeps_answering_when_a_replica_and_a_node_die(tmp_path: Path) -> None:
    cluster = LocalCluster(
        workdir=tmp_path / "cluster",
        workers=len(SHARDS),
        shards=SHARDS,
        worker_env={"SESSIONQUERY_SNAPSHOT_EVERY_EVENTS": "300"},
    )
    cluster.start()
    try:
        seeded, last = cluster.seed(CorpusSize(sessions=48, events=30, workspaces=16))
        cluster.wait_indexed(last)
        with ThreadPoolExecutor(1) as pool:
            loading = pool.submit(
                cluster.load, seeded, requests=800, seconds=40, concurrency=4, extra_sessions=12
            )
            # The load is running once its extra sessions reach the stream (they are
            # published from its start, beside the requests): a fixed sleep could end
            # before the load generator had started, or after its last request.
            deadline = time.monotonic() + 120
            while cluster.last_stream_seq() <= last and not loading.done():
                assert time.monotonic() < deadline, "the load published nothing in 120 s"
                time.sleep(0.2)
            cluster.kill_worker(0)  # one replica of 0-7
            cluster.kill_node(2)  # not the load generator's node (it connects to the first)
            load = loading.result()
        assert load.returncode == 0, load.stderr[-2000:]
        found = re.search(r"result: (\S+)", load.stdout)
        assert found is not None
        report = json.loads(Path(found.group(1)).read_text())["report"]
        assert report["ok"] > 0.9 * report["sent"], report
        assert set(report["errors_by_code"]) <= {"SESSION_QUERY_NOT_FOUND"}, report
        # Every workspace answers on its own partition, with a replica and a node gone.
        sidecar = seeded.with_name(seeded.name + ".sidecar.json")
        status = asyncio.run(_every_workspace_answers(cluster, sidecar, cluster.urls[:2]))
        assert set(status.values()) == {"ok"}, status
        cluster.restart_node(2)  # the operator's tools below dial every node
        # Nothing lost: each surviving index holds its partitions of the stream, exactly.
        after = cluster.last_stream_seq()
        cluster.wait_indexed(after)
        counts = asyncio.run(_stream_counts(cluster))
        assert sum(counts.values()) == after  # no event of the stream missed a partition

        def expected(held: str) -> int:
            return sum(n for k, n in counts.items() if k in PartitionSet.parse(held, COUNT))

        for i in (1, 2, 3):
            db = cluster.worker_procs[i].db_path
            assert _indexed_events(db) == expected(SHARDS[i]), i
        # A fresh worker for 0-7 joins from a snapshot, then catches up.
        joined = cluster.add_worker("0-7")
        cluster.wait_indexed(after)
        log = cluster.worker_procs[joined].log_path.read_text()
        assert "index restored from a snapshot" in log
        assert _indexed_events(cluster.worker_procs[joined].db_path) == expected("0-7")
    finally:
        cluster.stop()
    assert cluster.worker_pids == []
