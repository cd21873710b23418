"""Logging: structlog JSON lines (a console renderer when stderr is a terminal).

Every command, the runtime and the index writer's child process configure logging here, so
it sits beside the layers (it imports nothing from ``worker``): the store may use it.

Context variables are merged into every line, so binding ``request_id`` and ``tool`` once
per request (``request_context``) tags everything logged while serving it, including lines
from libraries that use the standard ``logging`` module.

structlog's own lines are rendered by structlog and written straight to the stream (one
write per line, under the stream logger's lock); only the standard library's lines go
through ``logging``'s handler, with the same processors, so both render alike. Routing
structlog through ``logging`` cost ~45 us per line (a LogRecord, the handler, a second
processor chain), on every request.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from types import TracebackType
from typing import Any, Final, TextIO

import orjson
import structlog
import structlog.tracebacks
from structlog.typing import EventDict, Processor, WrappedLogger

LEVELS = ("debug", "info", "warning", "error", "critical")


def configure_logging(
    json: bool | None = None, level: str = "info", *, stream: TextIO | None = None
) -> None:
    """Configure structlog and the standard library's root logger to render alike.

    ``json=None`` picks JSON unless stderr is a terminal; ``SESSIONQUERY_LOG_FORMAT``
    (``json`` or ``console``) and ``SESSIONQUERY_LOG_LEVEL`` override the defaults.
    """
    out = stream or sys.stderr
    fmt = os.environ.get("SESSIONQUERY_LOG_FORMAT", "").lower()
    if json is None:
        json = fmt == "json" if fmt in ("json", "console") else not out.isatty()
    level = os.environ.get("SESSIONQUERY_LOG_LEVEL", level).lower()
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, got {level!r}")
    numeric = logging.getLevelNamesMapping()[level.upper()]

    shared, renderer = _processors(json, out)
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
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
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Processor
    if json:
        renderer = render_json
        # Frame locals never: a connect frame's locals hold the password or token.
        shared.append(
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            )
        )
    else:
        renderer = structlog.dev.ConsoleRenderer(
            colors=out.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
    return shared, _Redacting(renderer)


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
        line = self._renderer(logger, name, event_dict)
        return redact(line) if isinstance(line, str) else line


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


class request_context:  # lower case: used like the function it replaced
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


def get_logger(name: str | None = None) -> Any:
    return structlog.get_logger(name)
