"""worker.logs: loggers bound once per configuration, the cheap timestamp, the batched sink."""

from __future__ import annotations

import io
import logging
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import orjson
import pytest
import structlog
from structlog.testing import capture_logs

from worker.log_sink import FLUSH_AFTER_S
from worker.logs import UtcTimestamp, add_secrets, configure_logging, get_logger


@pytest.fixture(autouse=True)
def _restore_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    names = ("SESSIONQUERY_LOG_LEVEL", "SESSIONQUERY_LOG_FORMAT", "SESSIONQUERY_LOG_FLUSH")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    yield
    for name in names:
        monkeypatch.delenv(name, raising=False)
    configure_logging(json=True, level="warning", stream=sys.stderr)


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


def test_a_module_logger_is_bound_once_and_follows_a_reconfiguration() -> None:
    log = get_logger("test.bound")  # made before any configuration, as at module import
    first, second = io.StringIO(), io.StringIO()
    configure_logging(json=True, level="info", stream=first)
    # The same bound logger each call: nothing is built per line.
    assert log.info.__self__ is log.info.__self__
    log.info("to the first", n=1)
    configure_logging(json=True, level="info", stream=second)
    log.info("to the second", n=2)
    assert [line["event"] for line in _lines(first)] == ["to the first"]
    assert [line["event"] for line in _lines(second)] == ["to the second"]


def test_a_line_below_the_level_is_a_no_op() -> None:
    out = io.StringIO()
    configure_logging(json=True, level="warning", stream=out)
    log = get_logger("test.level")
    log.info("dropped", secret_work=object())
    log.debug("dropped too")
    log.warning("kept")
    assert [line["event"] for line in _lines(out)] == ["kept"]
    # structlog's filtering logger makes a method below the level a shared no-op.
    assert log.info.__func__ is log.debug.__func__
    assert log.info.__func__ is not log.warning.__func__


def test_capture_logs_sees_a_module_logger() -> None:
    configure_logging(json=True, level="info", stream=io.StringIO())
    log = get_logger("test.capture")
    log.info("before")  # bound before the capture starts
    with capture_logs() as logs:
        log.info("captured", n=3)
    assert [entry["event"] for entry in logs] == ["captured"]


def test_the_timestamp_is_iso_utc_with_microseconds() -> None:
    stamp = UtcTimestamp()
    before = datetime.now(UTC)
    values = [str(stamp(None, "info", {})["timestamp"]) for _ in range(3)]
    after = datetime.now(UTC)
    for value in values:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", value), value
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        assert before.replace(microsecond=0) <= parsed <= after
    assert values == sorted(values)


def test_batched_lines_wait_a_little_and_a_warning_writes_them_in_order() -> None:
    out = io.StringIO()
    configure_logging(json=True, level="info", stream=out, flush="batched")
    log = get_logger("test.batched")
    log.info("first")
    logging.getLogger("nats.test").info("from the standard library")
    assert out.getvalue() == ""  # not yet written
    log.warning("trouble")  # written at once, with every line before it
    assert [line["event"] for line in _lines(out)] == [
        "first",
        "from the standard library",
        "trouble",
    ]
    log.info("later")
    deadline = time.monotonic() + 20 * FLUSH_AFTER_S
    while "later" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(FLUSH_AFTER_S / 4)
    assert _lines(out)[-1]["event"] == "later"


def test_batched_lines_are_written_when_logging_is_reconfigured() -> None:
    out = io.StringIO()
    configure_logging(json=True, level="info", stream=out, flush="batched")
    get_logger("test.batched").info("pending")
    configure_logging(json=True, level="info", stream=io.StringIO())
    assert [line["event"] for line in _lines(out)] == ["pending"]


@pytest.mark.parametrize("flush", ["line", "batched"])
def test_secrets_are_redacted_in_either_flush_mode(flush: str) -> None:
    add_secrets("S3cret-value-xyz")
    out = io.StringIO()
    configure_logging(json=True, level="info", stream=out, flush=flush)
    get_logger("test.secret").warning("connecting", url="nats://u:S3cret-value-xyz@h:4222")
    structlog.get_logger("test.secret").info("token S3cret-value-xyz")
    configure_logging(json=True, level="info", stream=io.StringIO())  # writes what waits
    text = out.getvalue()
    assert "S3cret-value-xyz" not in text and text.count("***") == 2, text


def test_an_unknown_flush_mode_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONQUERY_LOG_FLUSH", "sometimes")
    with pytest.raises(ValueError, match="log flush"):
        configure_logging(json=True, stream=io.StringIO())


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "console"])
def test_a_warning_or_an_error_quoting_a_credential_is_redacted(as_json: bool) -> None:
    """Logs carry no event text by design, but a warning or an error may carry an
    exception's message, and that can quote what it failed on (a refused event, a source
    record): those lines go through the credential rules; a request's info lines (codes,
    ids, timings) do not pay for it."""
    from contracts.redaction import generate

    gh, pw = generate("ghp_<A:36>"), generate("<A:12>7<A:5>")
    out = io.StringIO()
    configure_logging(json=as_json, level="info", stream=out)
    log = get_logger("test.credentials")
    log.warning("source record refused", reason=f"export GITHUB_TOKEN={gh}")
    try:
        raise ValueError(f"cannot parse DB_PASSWORD={pw}")
    except ValueError:
        log.exception("ingestion stopped")
    configure_logging(json=True, level="info", stream=io.StringIO())
    text = out.getvalue()
    assert gh not in text and pw not in text, text
    assert "[redacted:github-token]" in text and "[redacted:password]" in text
