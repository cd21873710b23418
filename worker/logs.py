"""Logging: structlog JSON lines (a console renderer when stderr is a terminal).

Every command, the runtime and the index writer's child process configure logging here, so
it sits beside the layers (it imports nothing from ``worker`` but ``worker.log_sink``): the
store may use it.

Context variables are merged into every line, so binding ``request_id`` and ``tool`` once
per request (``request_context``) tags everything logged while serving it, including lines
from libraries that use the standard ``logging`` module.

structlog's own lines are rendered by structlog and handed straight to one ``LineSink``;
the standard library's lines go through ``logging``'s handler, with the same processors,
into the same sink, so both render alike and stay in order. Routing structlog through
``logging`` cost ~45 us per line (a LogRecord, the handler, a second processor chain), on
every request.

What a request pays (issue 20): ``get_logger`` loggers are bound once per configuration
(structlog's lazy proxy built a new bound logger and stream logger on every call), so a
line below the level costs one no-op call; a line that is written costs its processors
(the timestamp's date and time of day formatted once a second) and one write
(``worker.log_sink``: at once, or batched).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TextIO

import orjson
import structlog
import structlog.tracebacks
from structlog.typing import EventDict, Processor, WrappedLogger

from worker.log_sink import SINK, SinkHandler, SinkLogger

if TYPE_CHECKING:
    from contracts.redaction import Redactor

LEVELS = ("debug", "info", "warning", "error", "critical")
FLUSH_MODES = ("line", "batched")


def configure_logging(
    json: bool | None = None,
    level: str = "info",
    *,
    stream: TextIO | None = None,
    flush: str = "line",
) -> None:
    """Configure structlog and the standard library's root logger to render alike.

    ``json=None`` picks JSON unless stderr is a terminal; ``SESSIONQUERY_LOG_FORMAT``
    (``json`` or ``console``), ``SESSIONQUERY_LOG_LEVEL`` and ``SESSIONQUERY_LOG_FLUSH``
    override the defaults. ``flush``: ``line`` writes and flushes every line at once;
    ``batched`` writes lines below warning within ``FLUSH_AFTER_S`` (``LineSink``).
    """
    global _generation
    out = stream or sys.stderr
    fmt = os.environ.get("SESSIONQUERY_LOG_FORMAT", "").lower()
    if json is None:
        json = fmt == "json" if fmt in ("json", "console") else not out.isatty()
    level = os.environ.get("SESSIONQUERY_LOG_LEVEL", level).lower()
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, got {level!r}")
    numeric = logging.getLevelNamesMapping()[level.upper()]
    flush = os.environ.get("SESSIONQUERY_LOG_FLUSH", flush).lower()
    if flush not in FLUSH_MODES:
        raise ValueError(f"log flush must be one of {', '.join(FLUSH_MODES)}, got {flush!r}")

    SINK.point_at(out, buffered=flush == "batched")
    shared, renderer = _processors(json, out)
    sink_logger = SinkLogger(SINK)
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=lambda *_: sink_logger,
        # get_logger's loggers bind once per configuration themselves (BoundOnce); the
        # lazy proxies of structlog.get_logger keep following a reconfiguration.
        cache_logger_on_first_use=False,
    )
    _generation += 1
    handler = SinkHandler(SINK)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)


def _processors(json: bool, out: TextIO) -> tuple[list[Processor], Processor]:
    """(the processors every record goes through, the redacting renderer)."""
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        UtcTimestamp(),
    ]
    renderer: Processor
    if json:
        renderer = render_json
        # Frame locals never: a connect frame's locals hold the password or token.
        shared.append(
            _WhenPresent(
                structlog.processors.StackInfoRenderer(),
                structlog.processors.ExceptionRenderer(
                    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
                ),
            )
        )
    else:
        shared.append(_WhenPresent(structlog.processors.StackInfoRenderer()))
        renderer = structlog.dev.ConsoleRenderer(
            colors=out.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
    return shared, _Redacting(renderer)


class UtcTimestamp:
    """``timestamp``: ISO 8601 in UTC with microseconds (``2026-12-05T11:58:54.755526Z``),
    the date and time of day formatted once a second (structlog's ``TimeStamper`` built a
    datetime per line: 1.5 us, this ~0.4)."""

    __slots__ = ("_second",)

    def __init__(self) -> None:
        self._second: tuple[int, str] = (-1, "")

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
        now = time.time()
        second = int(now)
        cached = self._second  # one tuple: threads never see a second with another's text
        if cached[0] != second:
            cached = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
            self._second = cached
        event_dict["timestamp"] = f"{cached[1]}.{int((now - second) * 1_000_000):06d}Z"
        return event_dict


class _WhenPresent:
    """Runs the stack and exception renderers only for a line that carries one."""

    __slots__ = ("_processors",)
    KEYS: Final = ("exc_info", "stack_info", "exception")

    def __init__(self, *processors: Processor) -> None:
        self._processors = processors

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> Any:
        if not any(key in event_dict for key in self.KEYS):
            return event_dict
        result: Any = event_dict
        for processor in self._processors:
            result = processor(logger, name, result)
        return result


# -- secrets never reach a log line --------------------------------------------------------

_SECRETS: list[str] = []  # longest first
# Credentials in a URL: scheme://user:password@ or scheme://token@.
_URL_USERINFO: Final = re.compile(r"(\b[a-z][a-z0-9+.-]*://)([^/@\s:'\"]+)(:[^/@\s'\"]*)?@", re.I)
REDACTED: Final = "***"


def add_secrets(*values: str | None) -> None:
    """Register values (passwords, tokens, seeds, creds contents) that no log line may
    carry: every rendered line has them replaced by ``***``."""
    for value in values:
        if value and len(value.strip()) >= 3 and value.strip() not in _SECRETS:
            _SECRETS.append(value.strip())
    _SECRETS.sort(key=len, reverse=True)


def redact_url(url: str) -> str:
    """``nats://user:pass@host`` -> ``nats://user:***@host``; ``nats://token@h`` ->
    ``nats://***@h``."""

    def hide(m: re.Match[str]) -> str:
        if m.group(3):
            return f"{m.group(1)}{m.group(2)}:{REDACTED}@"
        return f"{m.group(1)}{REDACTED}@"

    return _URL_USERINFO.sub(hide, url)


def redact(text: str) -> str:
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return redact_url(text) if "@" in text else text


class _Redacting:
    """Wraps the renderer: the finished line (message, fields, traceback) is scrubbed."""

    def __init__(self, renderer: Processor) -> None:
        self._renderer = renderer

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> Any:
        # Read before rendering (a renderer may consume the dict).
        scrub = event_dict.get("level") in _SCRUBBED_LEVELS
        line = self._renderer(logger, name, event_dict)
        if not isinstance(line, str):
            return line
        line = redact(line)
        # A warning or an error may carry an exception's message, which can quote what it
        # failed on (an event, a source record): those lines, rare, go through the
        # credential rules; a request's info lines (codes, ids, timings) carry no text.
        return _credentials().redact(line) if scrub else line


_SCRUBBED_LEVELS: Final = frozenset({"warning", "error", "critical", "exception"})


@functools.cache
def _credentials() -> Redactor:
    from contracts.redaction import Redactor  # its rules compiled on the first such line

    return Redactor()


# repr() for anything JSON cannot hold: a log line must never fail to render.
_STDLIB_JSON: Final = structlog.processors.JSONRenderer(default=repr)
# Dataclasses and datetimes go to repr() as they do with the standard library's json.
_ORJSON_OPTIONS: Final = (
    orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


def render_json(logger: WrappedLogger, name: str, event_dict: EventDict) -> str:
    """One JSON line, rendered by orjson (~1 us; the standard library's json took ~10 us
    of the ~45 us every request spent on its log line).

    The standard library renders whatever orjson refuses (surrogates, integers past 64
    bits, deep nesting) and every line orjson would write with non-ASCII text, so such a
    line keeps its ``\\uXXXX`` escapes and stays writable to any stream: a line always
    renders. orjson writes no spaces after ``:`` and ``,``; the keys and values are the
    same."""
    try:
        line = orjson.dumps(event_dict, default=repr, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError
        return str(_STDLIB_JSON(logger, name, event_dict))
    if not line.isascii():
        return str(_STDLIB_JSON(logger, name, event_dict))
    return line.decode("ascii")


class request_context:  # lower case: read as a function, ``with request_context(...)``
    """Bind values (``request_id``, ``tool``, ...) to every log line in this context.

    Restored with the tokens of the bind (structlog's ``bound_contextvars`` copies the
    whole context to save and restore it: ~8 us per request, this ~2)."""

    __slots__ = ("_tokens", "_values")

    def __init__(self, **values: Any) -> None:
        self._values = values
        self._tokens: Any = None

    def __enter__(self) -> None:
        self._tokens = structlog.contextvars.bind_contextvars(**self._values)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        structlog.contextvars.reset_contextvars(**self._tokens)


# Bumped by every configure_logging: a BoundOnce logger binds again after it.
_generation = 0


class BoundOnce:
    """A structlog logger bound once per configuration and then reused: a call below the
    level is one no-op method (structlog's lazy proxy bound a new logger on every call,
    ~2.5 us, before it could filter). Follows ``configure_logging`` (tests reconfigure it)
    and ``structlog.testing.capture_logs`` (which edits the processor list in place)."""

    __slots__ = ("_bound", "_generation", "_name")

    def __init__(self, name: str | None) -> None:
        self._name = name
        self._bound: Any = None
        self._generation = -1

    def __getattr__(self, attr: str) -> Any:
        generation = _generation
        if self._generation != generation:
            # The logger before its generation: another thread never sees a generation
            # without its logger (a reconfiguration racing this bind is seen next call).
            self._bound = structlog.get_logger(self._name).bind()
            self._generation = generation
        return getattr(self._bound, attr)


def get_logger(name: str | None = None) -> Any:
    """A logger for module level: bound once per configuration (``BoundOnce``)."""
    return BoundOnce(name)
