"""Three nats-server nodes on loopback, clustered with JetStream, for the node-kill test.

Built from ``EmbeddedNatsServer`` (the same child-process wrapper ``serve`` uses); each
node is only ever stopped or killed by the pid it was started with.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from nats.aio.client import Client as NATS

from worker.transport.embedded_server import EmbeddedNatsServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalCluster:
    root: Path
    size: int = 3
    name: str = "sq-reliability"
    nodes: list[EmbeddedNatsServer] = field(default_factory=list)

    def start(self) -> LocalCluster:
        ports = [free_port() for _ in range(self.size)]
        routes = tuple(f"nats://127.0.0.1:{p}" for p in ports)
        self.nodes = [
            EmbeddedNatsServer(
                store_dir=self.root / f"n{i}",
                server_name=f"n{i}",
                cluster_name=self.name,
                cluster_port=port,
                routes=tuple(r for r in routes if not r.endswith(f":{port}")),
            )
            for i, port in enumerate(ports)
        ]
        # Together: a node is healthy only once a JetStream meta leader has a quorum.
        with ThreadPoolExecutor(self.size) as pool:
            list(pool.map(lambda n: n.start(timeout=60), self.nodes))
        return self

    @property
    def urls(self) -> str:
        """Comma-separated seeds, as ``--nats-url`` takes them."""
        return ",".join(n.url for n in self.nodes)

    def node(self, name: str) -> EmbeddedNatsServer:
        return next(n for n in self.nodes if n.server_name == name)

    def node_of_port(self, port: int) -> EmbeddedNatsServer | None:
        return next((n for n in self.nodes if n.url.endswith(f":{port}")), None)

    def clients_on(self, node: EmbeddedNatsServer) -> list[str]:
        """Names of the client connections this node holds (from its /connz)."""
        if node.process is None:
            return []
        with urllib.request.urlopen(f"{node.monitor_url}/connz?limit=1024", timeout=5) as r:
            data = json.loads(r.read())
        return [str(c.get("name", "")) for c in data.get("connections") or []]

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()


async def wait_jetstream(nc: NATS, within: float = 60.0) -> None:
    """Until the cluster's JetStream answers (a meta leader is elected)."""
    deadline = time.monotonic() + within
    js = nc.jetstream()
    while True:
        try:
            await js.account_info()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
