"""Running a tool the way the runtime does: arguments, trusted execution, signal."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.envelope import AgentIdentity, Execution
from tests.tools._fakes import CALLER
from worker.signals import ExecutionSignal
from worker.store import SessionQueryService
from worker.tools import ToolConfig, ToolError, register_tools


def as_caller(session_id: str = CALLER, step_start_seq: int | None = None) -> Execution:
    return Execution(agent=AgentIdentity(session_id=session_id), step_start_seq=step_start_seq)


async def run_tool(
    service: SessionQueryService,
    tool: str,
    arguments: dict[str, Any],
    *,
    execution: Execution | None = None,
    signal: ExecutionSignal | None = None,
    config: ToolConfig | None = None,
    logger: Any = None,
) -> str:
    tools = register_tools(service, config or ToolConfig(), logger=logger)
    definition = tools.get(tool)
    assert definition is not None
    return await definition.run(arguments, execution or as_caller(), signal or ExecutionSignal())


async def tool_error(
    service: SessionQueryService, tool: str, arguments: dict[str, Any], **kw: Any
) -> ToolError:
    with pytest.raises(ToolError) as caught:
        await run_tool(service, tool, arguments, **kw)
    return caught.value


def outcome(error: ToolError) -> tuple[str, str]:
    return (error.code.value, error.message)
