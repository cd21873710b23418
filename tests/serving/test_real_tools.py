"""The composed worker with the real tools over the sample corpus, ingested via JetStream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from contracts.errors import ErrorCode
from contracts.subjects import TOOL_NAMES, Subjects
from tests._harness import body, call, sample_corpus_worker
from worker.commands.sample_corpus import (
    DEMO_CALLER,
    PAY_CHILD,
    PAY_ROOT,
    WEB_CHILD,
    WEB_ROOT,
)
from worker.worker import Worker

# The module's event loop, where its tests share one worker (they only ask it).
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def nc(module_nc: NATS) -> NATS:
    """The module's connection: its tests run in the module's loop, beside the worker."""
    return module_nc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def worker(
    module_nc: NATS, module_subjects: Subjects, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Worker]:
    """One worker over the sample corpus for the module, on names no other test uses."""
    tmp_path = tmp_path_factory.mktemp("real-tools")
    async with sample_corpus_worker(module_nc, module_subjects, tmp_path) as w:
        yield w


async def test_each_real_tool_answers_over_nats(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    manifest = orjson.loads((await nc.request(subjects.manifest, b"", timeout=5)).data)
    assert [t["name"] for t in manifest["tools"]] == list(TOOL_NAMES)
    assert manifest["prompt_section"]

    arguments: dict[str, dict[str, Any]] = {
        "session_search": {"query": "refund flake"},
        "session_event_search": {"query": "retry", "session_id": PAY_CHILD},
        "session_trace": {},
        "session_event_trace": {"session_id": PAY_ROOT, "seq": 3},
        "session_event_read": {"session_id": PAY_ROOT, "seq": 3, "before": 1},
    }
    texts = {}
    for tool, args in arguments.items():
        reply, _ = await call(nc, subjects, tool, body(caller=DEMO_CALLER, **args))
        assert reply["status"] == "ok", (tool, reply)
        texts[tool] = reply["content"]
        # The other workspace never shows up.
        assert WEB_ROOT not in reply["content"] and WEB_CHILD not in reply["content"]
    assert PAY_ROOT in texts["session_search"]
    assert PAY_ROOT in texts["session_trace"]
    assert "refund" in texts["session_event_read"].lower()


async def test_a_foreign_id_and_a_missing_id_answer_with_identical_bytes(
    nc: NATS, worker: Worker
) -> None:
    subjects = worker.config.subjects
    for tool in ("session_event_read", "session_trace", "session_event_search"):
        per_tool: dict[str, dict[str, Any]] = {
            "session_event_read": {"seq": 1},
            "session_trace": {},
            "session_event_search": {"query": "static"},
        }
        args = per_tool[tool]
        foreign, foreign_msg = await call(
            nc, subjects, tool, body("r-f-" + tool, caller=DEMO_CALLER, session_id=WEB_ROOT, **args)
        )
        _, missing_msg = await call(
            nc,
            subjects,
            tool,
            body("r-m-" + tool, caller=DEMO_CALLER, session_id="s-never-existed", **args),
        )
        assert foreign["status"] == "error"
        assert foreign["error"]["code"] == ErrorCode.NOT_FOUND.value

        # The reply names the requested ids; apart from them, nothing tells them apart.
        def masked(data: bytes, session_id: str, request_id: str) -> bytes:
            return data.replace(session_id.encode(), b"<id>").replace(request_id.encode(), b"<r>")

        assert masked(foreign_msg.data, WEB_ROOT, "r-f-" + tool) == masked(
            missing_msg.data, "s-never-existed", "r-m-" + tool
        )
        assert foreign_msg.headers is not None and missing_msg.headers is not None
        assert foreign_msg.headers.keys() == missing_msg.headers.keys()
        foreign_line = foreign_msg.headers["Nats-Service-Error"].replace(WEB_ROOT, "<id>")
        missing_line = missing_msg.headers["Nats-Service-Error"].replace("s-never-existed", "<id>")
        assert foreign_line == missing_line


async def test_a_request_without_identity_fails_closed(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    data = orjson.dumps({"request_id": "r-anon", "arguments": {"query": "refund"}})
    reply, _ = await call(nc, subjects, "session_search", data)
    assert reply["error"]["code"] == ErrorCode.NO_IDENTITY.value
