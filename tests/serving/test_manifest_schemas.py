"""The manifest a runtime mounts: its JSON Schemas are valid and accept the documented
examples, refuse what the worker refuses, and the worker accepts what they accept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from contracts.errors import ErrorCode
from contracts.messages import Manifest
from contracts.subjects import SEARCH_TOOLS, TOOL_NAMES
from worker.serving.service import manifest_of
from worker.store.sqlite import SqliteSessionStore
from worker.tools import ToolError, register_tools

# The docs/protocol.md request example, plus one realistic call per tool.
EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "session_search": [
        {"query": "flaky test", "event_types": ["tool/result"]},
        {
            "query": '"RefundLedger.apply" OR RetryPolicy -docs',
            "availability": ["persisted"],
            "include_root_sessions": True,
            "parent_session_ids": ["s-pay-refund-flake"],
            "created_after": "2026-11-01T00:00:00Z",
            "event_surfaces": ["tool", "assistant"],
        },
    ],
    "session_event_search": [
        {"query": "src/worker/store.py", "from_seq": 1, "to_seq": 40},
        {
            "query": "refund",
            "session_id": "s-pay-refund-flake",
            "event_before": "2026-12-01T00:00:00+01:00",
        },
    ],
    "session_trace": [{}, {"session_id": "s-pay-webhook-retry"}],
    "session_event_trace": [{"seq": 10}, {"session_id": "s-pay-refund-flake", "seq": 10}],
    "session_event_read": [
        {"seq": 3},
        {"session_id": "s-pay-refund-flake", "seq": 9, "before": 2, "after": 1},
    ],
}

INVALID: dict[str, list[dict[str, Any]]] = {
    "session_search": [{}, {"query": "x", "workspace": "/elsewhere"}, {"query": 5}],
    "session_event_search": [{"session_id": "s-1"}, {"query": "x", "cwd": "/"}],
    "session_trace": [{"session_id": "no spaces allowed"}, {"depth": 1}],
    "session_event_trace": [{}, {"seq": 0}],
    "session_event_read": [{"seq": 1, "before": -1}, {"seq": 1, "offset": 3}],
}


@pytest.fixture
async def manifest(tmp_path: Path) -> Any:
    store = await SqliteSessionStore.open(tmp_path / "index.sqlite")
    try:
        toolset = register_tools(store)
        yield toolset, manifest_of(toolset, "0.0.0-test", 16)
    finally:
        await store.close()


async def test_manifest_lists_the_five_tools_with_modes(manifest: Any) -> None:
    _, doc = manifest
    tools = {tool["name"]: tool for tool in doc["tools"]}
    assert set(tools) == set(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool["execution"] == ("exclusive" if name in SEARCH_TOOLS else "parallel")
        assert tool["read_only"] is True
        jsonschema.Draft202012Validator.check_schema(tool["input_schema"])
        assert tool["input_schema"]["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        # A standard validator picks the dialect from $schema.
        assert jsonschema.validators.validator_for(tool["input_schema"]) is (
            jsonschema.Draft202012Validator
        )
    assert "session_search" in doc["prompt_section"]
    assert doc["version"] == "0.0.0-test"
    # The contract's model (and so docs/asyncapi.yaml) describes what the worker serves.
    assert Manifest.model_validate(doc).model_dump() == doc


def _format_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """The validator $schema names, with formats checked (date-time needs rfc3339-validator,
    a test dependency)."""
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


async def test_schemas_work_in_a_standard_validator_with_formats_enabled(manifest: Any) -> None:
    _, doc = manifest
    schemas = {tool["name"]: tool["input_schema"] for tool in doc["tools"]}
    assert "date-time" in jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers
    for name, examples in EXAMPLES.items():
        for example in examples:
            _format_validator(schemas[name]).validate(example)
    # Formats are enforced: a timestamp that is not RFC 3339 is refused by the schema too.
    with pytest.raises(jsonschema.ValidationError, match="date-time"):
        _format_validator(schemas["session_search"]).validate(
            {"query": "x", "created_after": "yesterday"}
        )


async def test_schemas_accept_the_examples_and_so_does_the_worker(manifest: Any) -> None:
    toolset, doc = manifest
    schemas = {tool["name"]: tool["input_schema"] for tool in doc["tools"]}
    for name, examples in EXAMPLES.items():
        for example in examples:
            jsonschema.validate(example, schemas[name])
            # The worker's own validation agrees: without an identity the call fails
            # closed with NO_IDENTITY, not with an argument error.
            tool = toolset.get(name)
            assert tool is not None
            with pytest.raises(ToolError) as info:
                await _run_without_identity(tool, example)
            assert info.value.code is ErrorCode.NO_IDENTITY, (name, example, info.value)


async def test_schemas_refuse_what_the_worker_refuses(manifest: Any) -> None:
    toolset, doc = manifest
    schemas = {tool["name"]: tool["input_schema"] for tool in doc["tools"]}
    for name, examples in INVALID.items():
        for example in examples:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(example, schemas[name])
            tool = toolset.get(name)
            assert tool is not None
            with pytest.raises(ToolError) as info:
                await _run_without_identity(tool, example)
            assert info.value.code is ErrorCode.INVALID_ARGUMENTS, (name, example)


async def _run_without_identity(tool: Any, arguments: dict[str, Any]) -> str:
    from contracts.envelope import Execution
    from worker.signals import ExecutionSignal

    signal = ExecutionSignal.after(5)
    try:
        return str(await tool.run(arguments, Execution(), signal))
    finally:
        signal.close()
