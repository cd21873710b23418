"""register_tools: the five tools, their schemas, execution modes and the prompt section."""

from __future__ import annotations

import json

from contracts.subjects import SEARCH_TOOLS, TOOL_NAMES
from tests.tools._fakes import FakeService
from tests.tools._harness import as_caller
from worker.signals import ExecutionSignal
from worker.store import ServiceLimits
from worker.tools import ToolConfig, ToolSet, register_tools
from worker.tools.definitions import ToolDefinition
from worker.tools.presentation import SEMANTIC_ONLY


def tool_set() -> ToolSet:
    return register_tools(FakeService())


def test_registration_exposes_the_five_tools_read_only() -> None:
    tools = tool_set()
    assert tuple(tool.name for tool in tools.tools) == TOOL_NAMES
    assert all(tool.read_only for tool in tools.tools)


def test_exclusive_search_and_parallel_exact_read_classification() -> None:
    modes = {tool.name: tool.execution for tool in tool_set().tools}
    assert {name for name, mode in modes.items() if mode == "exclusive"} == SEARCH_TOOLS
    assert modes["session_trace"] == modes["session_event_trace"] == "parallel"
    assert modes["session_event_read"] == "parallel"


def test_schemas_describe_every_field_and_expose_no_cursor() -> None:
    for tool in tool_set().tools:
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        text = json.dumps(schema)
        for word in ("cursor", "offset", "page_size", "limit", "cwd"):
            assert f'"{word}"' not in text
        assert tool.description


def test_schema_required_fields() -> None:
    required = {tool.name: tool.input_schema.get("required", []) for tool in tool_set().tools}
    assert required["session_search"] == ["query"]
    assert required["session_event_search"] == ["query"]
    assert required["session_trace"] == []
    assert required["session_event_trace"] == ["seq"]
    assert required["session_event_read"] == ["seq"]


def test_schema_timestamps_are_strings() -> None:
    tool = tool_set().get("session_search")
    assert isinstance(tool, ToolDefinition)
    created = tool.input_schema["properties"]["created_after"]
    assert created["type"] == "string" and created["format"] == "date-time"
    assert "null" not in json.dumps(tool.input_schema)


def test_prompt_section_teaches_search_then_trace_and_read() -> None:
    prompt = tool_set().prompt_section
    for name in TOOL_NAMES:
        assert name in prompt
    assert prompt.index("session_search") < prompt.index("session_event_read")
    # Excerpts mark matches with brackets, which read like code unless the model is told.
    assert "matched terms in [brackets]" in prompt
    # A hit found by meaning alone is marked; the model is told what the mark means.
    assert f'"{SEMANTIC_ONLY}" was found by meaning alone' in prompt
    assert len(prompt) < 2000  # concise


async def test_disposable_registration_is_independent() -> None:
    """Two registrations share no state: each runs against its own service and config."""
    services = (FakeService.with_caller(), FakeService.with_caller())
    first = register_tools(services[0], ToolConfig(max_search_results=7))
    second = register_tools(services[1], ToolConfig(max_search_results=9))
    assert "up to 7 matches" in first.prompt_section
    assert "up to 9 matches" in second.prompt_section
    # Each registration calls only its own service.
    for tools, expected in ((first, [1, 0]), (second, [1, 1])):
        search = tools.get("session_search")
        assert search is not None
        await search.run({"query": "x"}, as_caller(), ExecutionSignal())
        assert [len(s.calls_of("search_sessions")) for s in services] == expected


def test_event_read_schema_states_the_service_window_limit() -> None:
    service = FakeService(limits_value=ServiceLimits(max_event_window=7))
    tool = register_tools(service).get("session_event_read")
    assert tool is not None
    assert tool.input_schema["properties"]["before"]["maximum"] == 7
    assert tool.input_schema["properties"]["after"]["maximum"] == 7


def test_tools_import_only_the_protocol_never_sqlite_or_nats() -> None:
    import ast
    from pathlib import Path

    import worker.tools

    # worker.config: the tools' own settings (ToolConfig) are declared with every other
    # setting, in a module that imports no layer of the worker.
    allowed = ("contracts", "worker.signals", "worker.store", "worker.tools", "worker.config",
               "pydantic", "pydantic_core", "structlog", "__future__")  # fmt: skip
    # The provider's search engine and schema are its own: the tools ask through the protocol.
    forbidden = (
        "worker.store.sqlite",
        "worker.store.index.writer",
        "worker.replica.ingest_actor",
        "worker.store.search.query",
        "worker.store.search.search_schema",
        "worker.store.search.search_follower",
        "worker.store.files.schema",
    )
    stdlib = {"asyncio", "collections", "contextlib", "dataclasses", "datetime", "functools",
              "json", "math",
              "re", "typing"}  # fmt: skip
    for path in Path(worker.tools.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(forbidden), f"{path.name} imports {name}"
                assert name.split(".")[0] in stdlib or name.startswith(allowed), (
                    f"{path.name} imports {name}"
                )
