"""Fast checks without a server: log redaction and the index-versus-stream verdicts."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import structlog

from worker.logs import configure_logging, redact_url
from worker.replica.continuity import StreamState, judge
from worker.transport.connection import NatsOptions, describe_error, register_secrets

STREAM = StreamState(name="SESSIONS", created="2026-12-03T10:00:00+00:00", first_seq=1,
                     last_seq=100, messages=100)  # fmt: skip


def _meta(
    seq: int, created: str | None = STREAM.created, name: str = "SESSIONS"
) -> dict[str, object]:
    out: dict[str, object] = {"stream_seq": seq}
    if created is not None:
        out.update(stream_name=name, stream_created=created)
    return out


def test_the_verdicts() -> None:
    assert judge(_meta(0, None), STREAM).action == "bind"
    assert judge(_meta(40), STREAM).action == "ok"
    assert judge(_meta(100), STREAM).action == "ok"
    recreated = judge(_meta(40, "2026-12-01T00:00:00+00:00"), STREAM)
    assert recreated.action == "diverged" and "was re-created" in recreated.reason
    ahead = judge(_meta(150), STREAM)
    assert ahead.action == "diverged" and "past the stream's last seq 100" in ahead.reason
    cut = StreamState("SESSIONS", STREAM.created, first_seq=61, last_seq=100, messages=40)
    gap = judge(_meta(40), cut)
    assert gap.action == "diverged" and "events 41..60 were removed" in gap.reason
    assert judge(_meta(60), cut).action == "ok"
    other = judge(_meta(10, name="OTHER"), STREAM)
    assert other.action == "diverged" and "replicates stream OTHER" in other.reason


def test_secrets_never_reach_a_log_line(tmp_path: Path) -> None:
    creds = tmp_path / "user.creds"
    seed = "SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4"
    creds.write_text(f"-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n")
    register_secrets(NatsOptions(password="Hunter2-pw", token="T0ken-abc", creds=str(creds)))
    out = io.StringIO()
    configure_logging(json=True, stream=out)
    log = structlog.get_logger("test")
    log.warning("connecting", url="nats://u:Hunter2-pw@h:4222", seed=seed)

    def connect(password: str) -> None:
        raise ConnectionError(f"refused for token T0ken-abc ({len(password)})")

    try:
        connect("Hunter2-pw")
    except ConnectionError:
        log.exception("failed")
    text = out.getvalue()
    for secret in ("Hunter2-pw", "T0ken-abc", seed):
        assert secret not in text
    lines = [orjson.loads(line) for line in text.splitlines()]
    assert lines[0]["url"] == "nats://u:***@h:4222"
    frames = lines[1]["exception"][0]["frames"]
    assert all("locals" not in frame for frame in frames)


def test_urls_and_reasons() -> None:
    assert redact_url("nats://a:b@h:1,nats://tok@h:2") == "nats://a:***@h:1,nats://***@h:2"
    assert describe_error(ConnectionRefusedError(111, "refused")).startswith("connection refused")
