"""The embedded nats-server gets its memory bounds (issue 41; not timed): the Go runtime's
limit in its environment, JetStream's memory storage from the config file it is given."""

from __future__ import annotations

from pathlib import Path

from worker.commands.serve import EmbeddedMemory
from worker.transport.embedded_server import EmbeddedNatsServer


def test_embedded_server_gets_its_memory_limits(tmp_path: Path) -> None:
    server = EmbeddedNatsServer(
        store_dir=tmp_path / "nats", memory_limit_mib=96, jetstream_memory_mib=24
    )
    server.start()
    try:
        assert server.process is not None
        environ = Path(f"/proc/{server.process.pid}/environ").read_bytes().split(b"\0")
        assert b"GOMEMLIMIT=96MiB" in environ
        log = (tmp_path / "nats" / "nats-server.log").read_text()
        # The server's own account of its JetStream limits at start.
        assert "Max Memory:      24.00 MB" in log
    finally:
        server.stop()


def test_no_limits_unless_asked_and_serve_defaults(tmp_path: Path) -> None:
    server = EmbeddedNatsServer(store_dir=tmp_path / "nats")
    assert server._env() is None and server._limits_conf() == []
    # A caller's own config file is left alone (one -c only).
    own = EmbeddedNatsServer(
        store_dir=tmp_path / "nats", extra_args=("-c", "x.conf"), jetstream_memory_mib=24
    )
    assert own._limits_conf() == []
    assert EmbeddedMemory().go_mib == 160 and EmbeddedMemory().jetstream_mib == 64
