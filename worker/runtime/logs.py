"""Logging: structlog JSON lines (a console renderer when stderr is a terminal).

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
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import structlog
from structlog.typing import Processor

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

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Processor
    if json:
        # repr() for anything JSON cannot hold: a log line must never fail to render.
        renderer = structlog.processors.JSONRenderer(default=repr)
        shared.append(structlog.processors.dict_tracebacks)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())

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


@contextmanager
def request_context(**values: Any) -> Iterator[None]:
    """Bind values (``request_id``, ``tool``, ...) to every log line in this context."""
    with structlog.contextvars.bound_contextvars(**values):
        yield


def get_logger(name: str | None = None) -> Any:
    return structlog.get_logger(name)
