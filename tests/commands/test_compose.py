"""compose.yaml is a valid 3-node JetStream cluster topology, and deploy.local_cluster runs
the same topology as local processes (loopback only, bounded, stopped by pid)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from contracts.client import SessionQueryClient
from contracts.envelope import AgentIdentity, Execution
from contracts.partitions import PartitionSet
from deploy.local_cluster import CorpusSize, LocalCluster
from worker.transport.connection import open_connection

ROOT = Path(__file__).resolve().parents[2]
NODES = ("nats1", "nats2", "nats3")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _flags(command: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in command:
        key, _, value = item.partition("=")
        out[key] = value
    return out


def test_three_node_jetstream_cluster_with_full_routes(compose: dict[str, Any]) -> None:
    services = compose["services"]
    names = set()
    for node in NODES:
        flags = _flags(services[node]["command"])
        assert "--jetstream" in flags
        assert flags["--cluster_name"] == "sessionquery"
        assert flags["--cluster"] == "nats://0.0.0.0:6222"
        names.add(flags["--name"])
        routes = set(flags["--routes"].split(","))
        # Each node routes to the two others, never to itself.
        assert routes == {f"nats://{other}:6222" for other in NODES if other != node}
        assert services[node]["healthcheck"]["test"][-1].endswith("/healthz")
        assert any(v.endswith(":/data") for v in services[node]["volumes"])
    assert names == set(NODES)
    # Only loopback is published to the host.
    assert all(p.startswith("127.0.0.1:") for p in services["nats1"]["ports"])


def test_nats_runs_with_the_accounts_config(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for node in NODES:
        flags = _flags(services[node]["command"])
        assert flags["--config"] == "/etc/nats/accounts.conf"
        assert "./deploy/nats-accounts.conf:/etc/nats/accounts.conf:ro" in services[node]["volumes"]
        env = services[node]["environment"]
        assert {"SESSIONQUERY_WORKER_PASSWORD", "SESSIONQUERY_RUNTIME_PASSWORD"} <= set(env)
    # Every client service connects as the worker user.
    for name in ("streams", "shard-a", "shard-b", "seeder", "loadgen"):
        assert services[name]["environment"]["NATS_USER"] == "worker", name
        assert services[name]["environment"]["NATS_PASSWORD"].startswith(
            "${SESSIONQUERY_WORKER_PASSWORD"
        )


def test_the_local_clusters_random_passwords_are_valid_config_values() -> None:
    """nats-server parses a variable's value as config: one starting with a digit was read
    as a number and the server refused to start (a random password did so, at random)."""
    from deploy.local_cluster import LocalCluster

    for _ in range(8):
        passwords = LocalCluster(workdir=Path("/nonexistent")).passwords
        assert all(pw[0].isalpha() for pw in passwords.values())
        env = {f"SESSIONQUERY_{user.upper()}_PASSWORD": pw for user, pw in passwords.items()}
        done = _check_accounts_config(env)
        assert done.returncode == 0, (passwords, done.stderr)


def _check_accounts_config(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``nats-server -t`` on deploy/nats-accounts.conf with the passwords in ``env``."""
    from worker.transport.embedded_server import find_nats_server

    return subprocess.run(
        [find_nats_server(), "-c", str(ROOT / "deploy" / "nats-accounts.conf"), "-t"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


def test_the_accounts_config_is_valid_for_nats_server() -> None:
    env = {
        "SESSIONQUERY_WORKER_PASSWORD": "w",
        "SESSIONQUERY_RUNTIME_PASSWORD": "r",
        "SESSIONQUERY_OPERATOR_PASSWORD": "o",
    }
    done = _check_accounts_config(env)
    assert done.returncode == 0, done.stderr


def test_sharded_workers_and_r3_streams(compose: dict[str, Any]) -> None:
    services = compose["services"]
    held: list[int] = []
    for name in ("shard-a", "shard-b"):
        worker = services[name]
        assert worker["deploy"]["replicas"] == 2  # each partition on 2 workers
        env = worker["environment"]
        assert env["SESSIONQUERY_STREAM_REPLICAS"] == "3"
        assert set(env["NATS_URL"].split(",")) == {f"nats://{n}:4222" for n in NODES}
        assert worker["depends_on"]["streams"]["condition"] == "service_completed_successfully"
        held += list(PartitionSet.parse(env["SESSIONQUERY_PARTITIONS"], 16))
        assert services["loadgen"]["depends_on"][name]["condition"] == "service_started"
    assert sorted(held) == list(range(16))  # the shards split the partitions
    streams = services["streams"]
    assert streams["entrypoint"][-1] == "deploy.streams"
    assert streams["command"] == ["--replicas", "3"]
    for node in NODES:
        assert streams["depends_on"][node]["condition"] == "service_healthy"


def test_seeder_and_load_generator(compose: dict[str, Any]) -> None:
    services = compose["services"]
    seeder = " ".join(services["seeder"]["command"])
    assert re.search(r"python -m bench\.corpus --out (\S+).*&& sessionquery import \1", seeder)
    loadgen = services["loadgen"]
    assert loadgen["entrypoint"][-1] == "bench.loadgen"
    flags = _flags(loadgen["command"])
    # bench.loadgen refuses non-loopback URLs; it shares nats1's network namespace.
    assert flags["--nats-url"] == "nats://127.0.0.1:4222"
    assert loadgen["network_mode"] == "service:nats1"
    assert int(flags["--requests"]) > 0 and float(flags["--seconds"]) > 0
    # Ingestion runs while the load does.
    assert int(flags["--extra-sessions"]) > 0 and float(flags["--extra-rate"]) > 0
    assert flags["--sidecar"].startswith("/corpus/")
    assert loadgen["depends_on"]["seeder"]["condition"] == "service_completed_successfully"
    assert set(compose["volumes"]) >= {"corpus", *NODES}


def test_dockerfile_copies_what_the_services_run() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for package in ("contracts", "worker", "bench", "deploy"):
        assert f"COPY {package} ./{package}" in dockerfile
        assert (ROOT / package / "__init__.py").exists()
    assert "'.[server]'" in dockerfile
    assert 'ENTRYPOINT ["sessionquery"]' in dockerfile


def _compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, timeout=30
        )
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def test_compose_config_validates_where_available() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("neither docker-compose nor the docker compose plugin is installed here")
    done = subprocess.run(
        [*command, "-f", str(ROOT / "compose.yaml"), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr


def test_local_cluster_runs_the_topology_and_survives_a_node_loss(tmp_path: Path) -> None:
    cluster = LocalCluster(workdir=tmp_path / "cluster", workers=2)
    cluster.start()
    try:
        assert all(url.startswith("nats://127.0.0.1:") for url in cluster.urls)
        corpus, last_seq = cluster.seed(CorpusSize(sessions=12, events=12, workspaces=3))
        cluster.wait_indexed(last_seq, timeout=60)
        assert [cluster.indexed_through(i) for i in range(2)] == [last_seq, last_seq]
        assert cluster.stream_replicas() == {
            "SESSIONS": 3,
            "SESSIONQUERY_SEARCH": 3,
            "OBJ_sessionquery-spill": 3,
        }
        load = cluster.load(corpus, requests=60, seconds=20, concurrency=4, extra_sessions=3)
        assert load.returncode == 0, load.stderr[-2000:]
        assert "transport failures: none" in load.stdout
        # Ingestion ran under the load, and both workers indexed what it published.
        published = re.search(r"extra events published during the load: (\d+)", load.stdout)
        assert published is not None and int(published.group(1)) > 0, load.stdout
        after = cluster.last_stream_seq()
        assert after == last_seq + int(published.group(1))
        cluster.wait_indexed(after, timeout=60)

        caller = next(line for line in corpus.read_text().splitlines() if '"session/start"' in line)
        session_id = re.search(r'"session_id":"([^"]+)"', caller)
        assert session_id is not None

        async def call(url: str, tool: str, arguments: dict[str, Any]) -> str:
            # As an agent runtime would: the runtime user, its own inbox prefix.
            nc = await open_connection(
                url,
                connect_timeout=5,
                max_reconnect_attempts=20,
                **cluster.connect_options("runtime"),
            )
            try:
                reply = await SessionQueryClient(nc).call(
                    tool,
                    arguments,
                    Execution(agent=AgentIdentity(session_id=session_id.group(1))),
                    timeout=30,
                )
                assert reply.status == "ok", reply
                return reply.content or ""
            finally:
                await nc.close()

        assert session_id.group(1) in asyncio.run(call(cluster.urls[1], "session_trace", {}))
        # Losing one of three nodes keeps quorum: traces still answer, and searches still
        # pass through the R3 work-queue stream.
        cluster.kill_node(0)
        assert session_id.group(1) in asyncio.run(call(cluster.urls[2], "session_trace", {}))
        assert asyncio.run(call(cluster.urls[1], "session_search", {"query": "test"}))
        pids = cluster.worker_pids
        assert len(pids) == 2
    finally:
        cluster.stop()
    assert cluster.worker_pids == []
