"""The model-facing session query tools: the public composition root.

``register_tools`` gives the runtime the five read-only tools (schemas, descriptions,
execution modes, a declared handler each: ``admit``, ``prepare``, ``run``) and the prompt
section; ``model_error`` gives it the one error table (``errors``) for whatever escapes a
run and ``abort_error`` the one answer to its own fired signal, so the runtime translates
nothing itself.
Everything else in this package is internal. The tools depend on the
``SessionQueryService`` protocol only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from structlog.typing import FilteringBoundLogger

from contracts.partitions import PartitionScope
from worker.config import ToolConfig
from worker.store import SessionQueryService
from worker.tools import handlers
from worker.tools import input as args_input
from worker.tools.context import ToolContext
from worker.tools.definitions import (
    Admitted,
    Endpoint,
    ExecutionMode,
    ToolDefinition,
    ToolError,
    ToolHandler,
    ToolSet,
)
from worker.tools.errors import (
    QUEUE_TIMEOUT_MESSAGE,
    abort_error,
    model_error,
    model_error_of,
    tool_failed,
)
from worker.tools.operator import OperatorQueries, OperatorRequest, OperatorVerb
from worker.tools.prompt import PROMPT_SECTION, prompt_section
from worker.tools.service_boundary import ServiceBoundary

__all__ = [
    "ARGUMENT_MODELS",
    "JSON_SCHEMA_DIALECT",
    "PROMPT_SECTION",
    "QUEUE_TIMEOUT_MESSAGE",
    "Admitted",
    "Endpoint",
    "OperatorQueries",
    "OperatorRequest",
    "OperatorVerb",
    "ToolConfig",
    "ToolDefinition",
    "ToolError",
    "ToolHandler",
    "ToolSet",
    "abort_error",
    "input_schema",
    "model_error",
    "model_error_of",
    "register_tools",
    "tool_failed",
]

_DESCRIPTIONS: Mapping[str, str] = {
    "session_search": (
        "Full-text search over earlier sessions of this workspace (not the current one), "
        "grouped by session, best match first. Each hit shows the session id, title, "
        "availability, created/updated times, parent, and its strongest matching event "
        "(seq, type, surface, time) with an excerpt, matched terms in [brackets]. Optional "
        "filters narrow by session ids, parents, root sessions, times, availability, event "
        "types, surfaces and event times."
    ),
    "session_event_search": (
        "Full-text search inside one session, returning matching events (seq, type, "
        "surface, time, excerpt with matched terms in [brackets]), best first. Defaults to "
        "the current session, whose current step is never searched."
    ),
    "session_trace": (
        "The lineage of a session (default: the current one): its complete ancestor chain "
        "and every descendant sub-session, recursively, with titles."
    ),
    "session_event_trace": (
        "Every known replacement of one event (what it replaced, what replaced it, "
        "transitively) and every event it cites or that cites it."
    ),
    "session_event_read": (
        "Read one event exactly, as its complete original JSON; before/after add that many "
        "neighbouring events as one-line summaries (default: the event only)."
    ),
}


JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

ARGUMENT_MODELS: Mapping[str, type[BaseModel]] = {
    "session_search": args_input.SessionSearchArguments,
    "session_event_search": args_input.SessionEventSearchArguments,
    "session_trace": args_input.SessionTraceArguments,
    "session_event_trace": args_input.SessionEventTraceArguments,
    "session_event_read": args_input.SessionEventReadArguments,
}


def input_schema(name: str, max_event_window: int) -> dict[str, Any]:
    """The manifest's JSON Schema (2020-12) for one tool's arguments."""
    return _with_window_limit(_schema(ARGUMENT_MODELS[name]), max_event_window)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema, flattened for a model to read: an optional field is shown as
    its plain type (omitting it is how a model says "none"), without generated titles."""
    schema = {"$schema": JSON_SCHEMA_DIALECT, **model.model_json_schema()}
    schema.pop("title", None)
    properties: dict[str, dict[str, Any]] = schema.get("properties", {})
    for name, prop in list(properties.items()):
        prop.pop("title", None)
        variants = prop.get("anyOf")
        if isinstance(variants, list):
            concrete = [v for v in variants if v != {"type": "null"}]
            if len(concrete) == 1 and len(concrete) < len(variants):
                flat = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
                properties[name] = {**concrete[0], **flat}
    return schema


def _with_window_limit(schema: dict[str, Any], limit: int) -> dict[str, Any]:
    """Show the service's event-window bound on before/after, so the model need not guess."""
    properties = schema.get("properties", {})
    if "before" in properties and "after" in properties:
        for name in ("before", "after"):
            properties[name]["maximum"] = limit
    return schema


def register_tools(
    service: SessionQueryService,
    config: ToolConfig = ToolConfig(),  # noqa: B008 - frozen, so a shared default is safe
    *,
    logger: FilteringBoundLogger | None = None,
    partition: PartitionScope | None = None,
) -> ToolSet:
    """The five tools over ``service``. Searches are ``exclusive``, the rest ``parallel``.
    With ``partition``, the tools answer that partition's subjects: a caller of another
    partition is answered as an unknown caller."""
    context = ToolContext(
        service=service, boundary=ServiceBoundary(logger), config=config, partition=partition
    )
    # Searches run one at a time: their checks and catch-up wait run beside the lane.
    table: tuple[tuple[ExecutionMode, ToolHandler], ...] = (
        ("exclusive", handlers.SessionSearch(context)),
        ("exclusive", handlers.SessionEventSearch(context)),
        ("parallel", handlers.SessionTrace(context)),
        ("parallel", handlers.SessionEventTrace(context)),
        ("parallel", handlers.SessionEventRead(context)),
    )
    window = service.limits.max_event_window
    tools = tuple(
        ToolDefinition(
            name=handler.name,
            description=_DESCRIPTIONS[handler.name],
            input_schema=input_schema(handler.name, window),
            execution=mode,
            handler=handler,
            read_only=True,
            partition=partition.partition if partition is not None else None,
        )
        for mode, handler in table
    )
    return ToolSet(tools=tools, prompt_section=prompt_section(config.max_search_results))
