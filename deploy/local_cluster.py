"""compose.yaml's topology as local processes, on loopback only, behind one command.

Over 400 lines: one topology: its servers, workers, seeder and load start and stop together.

Three clustered nats-servers with JetStream (R3 streams), worker processes
(``sessionquery serve``, each with its own index), a seeder (``python -m bench.corpus`` then
``sessionquery import``) and the load generator (``python -m bench.loadgen``).

    python -m deploy.local_cluster [--seconds N] [--requests N] [--workers N] ...

Bounded in time and count; stops everything it started, by pid, and prints a summary.
``LocalCluster`` is the same thing as a class for the reliability tests: ``start``/``stop``,
``kill_node(i)``/``restart_node(i)``, ``kill_worker(i)``/``stop_worker(i)``/``start_worker(i)``.

Like compose.yaml, the nats-servers run with the accounts and users of
``deploy/nats-accounts.conf`` (a ``worker`` and a ``runtime`` user, random passwords per
cluster); ``connect_options(user)`` gives what a client of that user passes to connect.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from contracts.subjects import Subjects
from worker.transport.connection import open_connection
from worker.transport.embedded_server import EmbeddedNatsServer

LOOPBACK: Final = "127.0.0.1"
CLUSTER_NAME: Final = "sessionquery-local"
READY_LINE: Final = "serving the five"
ROOT: Final = Path(__file__).resolve().parent.parent
ACCOUNTS_CONF: Final = ROOT / "deploy" / "nats-accounts.conf"
# The runtime user may only subscribe under this inbox prefix (deploy/nats-accounts.conf).
RUNTIME_INBOX_PREFIX: Final = "_INBOX_runtime"
# The operator user (``sessionquery ui``) replies under this one.
OPERATOR_INBOX_PREFIX: Final = "_INBOX_operator"
USERS: Final = ("worker", "runtime", "operator")


class ClusterError(RuntimeError):
    pass


@dataclass(frozen=True)
class CorpusSize:
    sessions: int = 120
    events: int = 60
    workspaces: int = 8
    seed: int = 7


@dataclass
class WorkerProcess:
    index: int
    db_path: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class LocalCluster:
    """Three clustered nats-servers and N worker processes under ``workdir``."""

    workdir: Path
    nodes: int = 3
    workers: int = 2
    replicas: int = 3
    # Only the prefix is configurable: serve uses the default stream and bucket names.
    subject_prefix: str = "sessionquery"
    # Worker i holds shards[i] (e.g. "0-7"); empty: every worker holds every partition.
    shards: Sequence[str] = ()
    # Extra SESSIONQUERY_* settings for every worker (e.g. small spill thresholds).
    worker_env: dict[str, str] = field(default_factory=dict)
    # Random per cluster; nats-server reads them from its environment (see ACCOUNTS_CONF).
    # Letters first: nats-server parses a variable's value as config, and one starting
    # with a digit as a number (the server refused to start, at random).
    passwords: dict[str, str] = field(
        default_factory=lambda: {user: "pw" + secrets.token_hex(18) for user in USERS},
        repr=False,
    )
    servers: list[EmbeddedNatsServer] = field(default_factory=list, init=False)
    worker_procs: list[WorkerProcess] = field(default_factory=list, init=False)

    @property
    def subjects(self) -> Subjects:
        return Subjects(prefix=self.subject_prefix)

    # -- the NATS cluster ---------------------------------------------------------------

    @property
    def urls(self) -> list[str]:
        return [f"nats://{LOOPBACK}:{s.port}" for s in self.servers]

    @property
    def url(self) -> str:
        """Every node's URL, comma-separated, as ``--nats-url`` takes it."""
        return ",".join(self.urls)

    def connect_options(self, user: str = "worker") -> dict[str, Any]:
        """Keyword arguments for ``nats.connect`` as ``user`` (worker, runtime, operator)."""
        options: dict[str, Any] = {"user": user, "password": self.passwords[user]}
        if user == "runtime":
            options["inbox_prefix"] = RUNTIME_INBOX_PREFIX
        if user == "operator":
            options["inbox_prefix"] = OPERATOR_INBOX_PREFIX
        return options

    def _credentials_env(self) -> dict[str, str]:
        """NATS_USER/NATS_PASSWORD as the worker user, for the CLI processes we start."""
        return {"NATS_USER": "worker", "NATS_PASSWORD": self.passwords["worker"]}

    def _server_env(self) -> dict[str, str]:
        return {f"SESSIONQUERY_{user.upper()}_PASSWORD": pw for user, pw in self.passwords.items()}

    def start(self, *, timeout: float = 60.0) -> None:
        """Start the cluster, create the R3 events stream, start the workers."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start_nodes(timeout)
            asyncio.run(self._ensure_streams())
            for i in range(self.workers):
                self.worker_procs.append(
                    WorkerProcess(
                        index=i,
                        db_path=self.workdir / f"worker-{i}" / "index.sqlite",
                        log_path=self.workdir / f"worker-{i}.log",
                    )
                )
            for i in range(self.workers):
                self.start_worker(i, wait=False)
            for i in range(self.workers):
                self._wait_worker_ready(i, timeout)
        except BaseException:
            self.stop()
            raise

    def _start_nodes(self, timeout: float) -> None:
        ports = _free_ports(2 * self.nodes)
        client_ports, cluster_ports = ports[: self.nodes], ports[self.nodes :]
        for i in range(self.nodes):
            routes = tuple(
                f"nats://{LOOPBACK}:{cluster_ports[j]}" for j in range(self.nodes) if j != i
            )
            self.servers.append(
                EmbeddedNatsServer(
                    store_dir=self.workdir / f"nats-{i}",
                    port=client_ports[i],
                    server_name=f"n{i}",
                    cluster_name=CLUSTER_NAME,
                    cluster_port=cluster_ports[i],
                    routes=routes,
                    extra_args=("-c", str(ACCOUNTS_CONF)),
                    env=self._server_env(),
                )
            )
        # Together: a node reports healthy only once the JetStream meta leader has a quorum.
        with ThreadPoolExecutor(self.nodes) as pool:
            for done in [pool.submit(s.start, timeout) for s in self.servers]:
                done.result()
        self.wait_healthy(timeout=timeout)

    def wait_healthy(self, *, timeout: float = 60.0) -> None:
        """Until every running node answers a full /healthz (a JetStream meta leader known)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(_healthy(s.monitor_url) for s in self.servers if s.process is not None):
                return
            time.sleep(0.2)
        raise ClusterError(f"the NATS cluster had no JetStream meta leader within {timeout:.0f} s")

    async def _ensure_streams(self) -> None:
        """The events stream with R replicas, before anything else creates it as R1."""
        from deploy.streams import ensure_replicated_events_stream

        await ensure_replicated_events_stream(
            self.urls, replicas=self.replicas, subjects=self.subjects, **self.connect_options()
        )

    def kill_node(self, i: int) -> None:
        """SIGKILL node ``i`` (our own child, by pid)."""
        self.servers[i].kill()

    def stop_node(self, i: int) -> None:
        self.servers[i].stop()

    def restart_node(self, i: int, *, timeout: float = 60.0) -> None:
        """Start node ``i`` again on the same ports and store, and wait for the cluster."""
        self.servers[i].start(timeout)
        self.wait_healthy(timeout=timeout)

    # -- workers ------------------------------------------------------------------------

    def start_worker(self, i: int, *, wait: bool = True, timeout: float = 60.0) -> int:
        """Start (or restart) worker ``i``; returns its pid."""
        proc = self.worker_procs[i]
        if proc.alive:
            assert proc.pid is not None
            return proc.pid
        proc.db_path.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQUERY_")}
        env.update(self.worker_env)
        env.update(self._credentials_env())
        env["SESSIONQUERY_LOG_FORMAT"] = "json"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        argv = [
            sys.executable, "-m", "worker.cli", "serve",
            "--nats-url", self.url,
            "--db", str(proc.db_path),
            "--stream-replicas", str(self.replicas),
            "--subject-prefix", self.subjects.prefix,
            "--partitions", self.partitions_of(i),
        ]  # fmt: skip
        with proc.log_path.open("ab") as log:
            proc.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=proc.db_path.parent
            )
        if wait:
            self._wait_worker_ready(i, timeout)
        return proc.process.pid

    def add_worker(self, partitions: str = "all", *, timeout: float = 60.0) -> int:
        """Start one more worker, on an empty home, holding ``partitions``; its index."""
        i = len(self.worker_procs)
        self.shards = (*(self.shards or ("all",) * i), partitions)
        self.workers = i + 1
        self.worker_procs.append(
            WorkerProcess(
                index=i,
                db_path=self.workdir / f"worker-{i}" / "index.sqlite",
                log_path=self.workdir / f"worker-{i}.log",
            )
        )
        self.start_worker(i, timeout=timeout)
        return i

    def partitions_of(self, i: int) -> str:
        """The partition set worker ``i`` holds."""
        return self.shards[i] if self.shards else "all"

    def _wait_worker_ready(self, i: int, timeout: float) -> None:
        proc = self.worker_procs[i]
        assert proc.process is not None
        start = proc.log_path.stat().st_size if proc.log_path.exists() else 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.process.poll() is not None:
                raise ClusterError(
                    f"worker {i} exited with {proc.process.returncode}; see {proc.log_path}"
                )
            with proc.log_path.open("rb") as fh:
                fh.seek(max(0, start - 4096))
                if READY_LINE.encode() in fh.read():
                    return
            time.sleep(0.1)
        raise ClusterError(f"worker {i} was not serving within {timeout:.0f} s")

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i``, by its pid."""
        proc = self.worker_procs[i]
        if proc.process is not None and proc.alive:
            os.kill(proc.process.pid, signal.SIGKILL)
            proc.process.wait()

    def stop_worker(self, i: int, *, timeout: float = 60.0) -> int | None:
        """SIGTERM worker ``i`` (graceful) and return its exit code."""
        proc = self.worker_procs[i]
        if proc.process is None:
            return None
        if proc.alive:
            os.kill(proc.process.pid, signal.SIGTERM)
            try:
                proc.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.process.pid, signal.SIGKILL)
                proc.process.wait()
        return proc.process.returncode

    @property
    def worker_pids(self) -> list[int]:
        return [p.pid for p in self.worker_procs if p.alive and p.pid is not None]

    def indexed_through(self, i: int) -> int:
        """The SESSIONS stream sequence worker ``i``'s index is complete through, its
        search index included (a search right after the wait finds what was seeded)."""
        from worker.store.files.index_file import searchable_seq

        return searchable_seq(self.worker_procs[i].db_path)

    def wait_indexed(self, stream_seq: int, *, timeout: float = 120.0) -> None:
        """Until every running worker's index holds the stream through ``stream_seq``: a
        shard's, through the last event of its partitions up to there."""
        targets = asyncio.run(self._held_targets(stream_seq))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = [p.index for p in self.worker_procs if p.alive]
            if all(self.indexed_through(i) >= targets[i] for i in running):
                return
            time.sleep(0.2)
        raise ClusterError(f"the workers did not index through {stream_seq} in {timeout:.0f} s")

    async def _held_targets(self, stream_seq: int) -> list[int]:
        from worker.replica.continuity import stream_state

        nc = await open_connection(
            self.urls, connect_timeout=5, max_reconnect_attempts=5, **self.connect_options()
        )
        try:
            js = nc.jetstream(timeout=20)
            name = self.subjects.events_stream
            targets = []
            for i in range(self.workers):
                state = await stream_state(js, name, self.partitions_of(i), self.subjects)
                targets.append(min(stream_seq, state.target_seq))
            return targets
        finally:
            await nc.close()

    # -- seeder and load generator ----------------------------------------------------

    def seed(self, size: CorpusSize, *, timeout: float = 300.0) -> tuple[Path, int]:
        """Generate a corpus and import it; returns (the JSONL file, last stream sequence)."""
        out = self.workdir / "corpus.jsonl"
        _run(
            [
                sys.executable, "-m", "bench.corpus", "--out", str(out),
                "--sessions", str(size.sessions), "--events", str(size.events),
                "--workspaces", str(size.workspaces), "--seed", str(size.seed),
            ],
            timeout=timeout,
        )  # fmt: skip
        _run(
            [
                sys.executable, "-m", "worker.cli", "import", str(out), "--quiet",
                "--nats-url", self.url,
                "--stream", self.subjects.events_stream,
                "--events-prefix", self.subjects.events_prefix,
            ],
            timeout=timeout,
            env=self._credentials_env(),
        )  # fmt: skip
        return out, self.last_stream_seq()

    def last_stream_seq(self) -> int:
        """The events stream's last sequence."""
        return asyncio.run(self._last_stream_seq())

    async def _last_stream_seq(self) -> int:
        nc = await open_connection(
            self.urls, connect_timeout=5, max_reconnect_attempts=5, **self.connect_options()
        )
        try:
            info = await nc.jetstream(timeout=20).stream_info(self.subjects.events_stream)
            return int(info.state.last_seq)
        finally:
            await nc.close()

    def stream_replicas(self) -> dict[str, int]:
        """Replicas of each stream the topology uses (events, search queue, spill bucket)."""
        return asyncio.run(self._stream_replicas())

    async def _stream_replicas(self) -> dict[str, int]:
        from nats.js.errors import NotFoundError

        names = (
            self.subjects.events_stream,
            self.subjects.search_stream,
            f"OBJ_{self.subjects.spill_bucket}",
        )
        nc = await open_connection(
            self.urls, connect_timeout=5, max_reconnect_attempts=5, **self.connect_options()
        )
        try:
            js = nc.jetstream(timeout=20)
            out: dict[str, int] = {}
            for name in names:
                with contextlib.suppress(NotFoundError):
                    out[name] = int((await js.stream_info(name)).config.num_replicas or 1)
            return out
        finally:
            await nc.close()

    def load(
        self,
        corpus: Path,
        *,
        requests: int,
        seconds: float,
        concurrency: int = 8,
        extra_sessions: int = 0,
        extra_rate: float = 300.0,
        extra: Sequence[str] = (),
    ) -> subprocess.CompletedProcess[str]:
        """Run the load generator against the cluster (bounded by requests and seconds);
        with ``extra_sessions`` it publishes that many new sessions at ``extra_rate`` events/s
        while the load runs, so ingestion runs beside the queries."""
        argv = [
            sys.executable, "-m", "bench.loadgen",
            "--nats-url", self.urls[0],
            "--sidecar", str(corpus.with_name(corpus.name + ".sidecar.json")),
            "--requests", str(requests), "--seconds", str(seconds),
            "--concurrency", str(concurrency),
            "--prefix", self.subjects.prefix,
            "--events-stream", self.subjects.events_stream,
            "--events-prefix", self.subjects.events_prefix,
        ]  # fmt: skip
        for pid in self.worker_pids:
            argv += ["--worker-pid", str(pid)]
        if extra_sessions:
            argv += ["--extra-sessions", str(extra_sessions), "--extra-rate", str(extra_rate)]
        argv += list(extra)
        # The load generator is a bench tool (it reads $SRV stats too): the worker user.
        return _run(argv, timeout=seconds + 120, check=False, env=self._credentials_env())

    # -- lifecycle ----------------------------------------------------------------------

    def stop(self) -> None:
        """Workers first (graceful, then SIGKILL), then the nodes; only our own pids."""
        for i in range(len(self.worker_procs)):
            with contextlib.suppress(Exception):
                self.stop_worker(i, timeout=30)
        for server in self.servers:
            with contextlib.suppress(Exception):
                server.stop()

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _healthy(monitor_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{monitor_url}/healthz", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _free_ports(count: int) -> list[int]:
    """Distinct free loopback ports (held together while choosing, so none repeats)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _run(
    argv: Sequence[str],
    *,
    timeout: float,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        list(argv), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    if check and done.returncode != 0:
        raise ClusterError(
            f"{' '.join(argv[:4])} failed ({done.returncode}): {done.stderr[-2000:]}"
        )
    return done


def _summary(cluster: LocalCluster, seeded: int, last_seq: int, load: Any, elapsed: float) -> str:
    lines = [
        "",
        "local cluster summary",
        f"  nats nodes: {len(cluster.servers)} ({', '.join(cluster.urls)})",
        f"  events in {cluster.subjects.events_stream}: {last_seq} ({seeded} seeded,"
        f" {last_seq - seeded} published during the load)",
        "  stream replicas: "
        + ", ".join(f"{name} R{n}" for name, n in cluster.stream_replicas().items()),
    ]
    for proc in cluster.worker_procs:
        lines.append(
            f"  worker {proc.index}: partitions {cluster.partitions_of(proc.index)}, pid"
            f" {proc.pid}, indexed through "
            f"{cluster.indexed_through(proc.index)}, log {proc.log_path}"
        )
    lines.append(f"  load generator exit code: {load.returncode}")
    lines.append(f"  wall time: {elapsed:.1f} s")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.local_cluster", description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0, help="load duration bound")
    parser.add_argument("--requests", type=int, default=500, help="load request bound")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--shards",
        default="",
        help="each worker's partitions, ';' between (e.g. '0-7;0-7;8-15;8-15': 16 partitions,"
        " each on 2 of 4 workers); default: every worker holds all",
    )
    parser.add_argument("--sessions", type=int, default=CorpusSize.sessions)
    parser.add_argument("--events", type=int, default=CorpusSize.events, help="per session")
    parser.add_argument("--workspaces", type=int, default=CorpusSize.workspaces)
    parser.add_argument(
        "--extra-sessions",
        type=int,
        default=20,
        help="new sessions published while the load runs (ingestion under load; 0: none)",
    )
    parser.add_argument("--extra-rate", type=float, default=300.0, help="their events/s")
    parser.add_argument("--dir", type=Path, default=None, help="keep state here (default: tmp)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.requests < 1 or not 1 <= args.workers <= 8:
        parser.error("--seconds > 0, --requests >= 1 and 1 <= --workers <= 8 are required")
    shards = tuple(filter(None, args.shards.split(";")))
    if shards and len(shards) != args.workers:
        parser.error(f"--shards names {len(shards)} sets for {args.workers} workers")
    size = CorpusSize(sessions=args.sessions, events=args.events, workspaces=args.workspaces)
    with contextlib.ExitStack() as stack:
        workdir = args.dir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="sq-cluster-"))
        )
        started = time.monotonic()
        cluster = LocalCluster(workdir=workdir, workers=args.workers, shards=shards)
        print(f"starting 3 nats-servers and {args.workers} workers under {workdir}", flush=True)
        cluster.start()
        stack.callback(cluster.stop)
        print(f"cluster up: {cluster.url}", flush=True)
        corpus, last_seq = cluster.seed(size)
        print(f"seeded {last_seq} events; waiting for every worker to index them", flush=True)
        cluster.wait_indexed(last_seq)
        print(f"load: up to {args.requests} requests in {args.seconds:.0f} s", flush=True)
        load = cluster.load(
            corpus,
            requests=args.requests,
            seconds=args.seconds,
            concurrency=args.concurrency,
            extra_sessions=args.extra_sessions,
            extra_rate=args.extra_rate,
        )
        print(load.stdout, flush=True)
        if load.returncode != 0:
            print(load.stderr[-4000:], file=sys.stderr)
        after = cluster.last_stream_seq()
        cluster.wait_indexed(after)  # what the load published is indexed too
        summary = _summary(cluster, last_seq, after, load, time.monotonic() - started)
        print(summary, flush=True)
        return 0 if load.returncode == 0 else 1
    return 1  # unreachable; ExitStack does not swallow exceptions


if __name__ == "__main__":
    sys.exit(main())
