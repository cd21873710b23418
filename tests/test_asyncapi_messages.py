"""Every message of docs/asyncapi.yaml, as its schema and examples describe it, sent to a
real worker over the sample corpus (issue 23; the cancel is in
tests/serving/test_asyncapi_cancel.py): each tool's example on the tool's channel and on
its partition's channel is answered ok with a reply its schema accepts, the same on both;
the manifest request is answered with a manifest; the event example, published on the
documented address, is indexed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
import pytest_asyncio
import yaml
from nats.aio.client import Client as NATS

from contracts.partitions import partition_of_cwd, workspace_key
from contracts.subjects import TOOL_NAMES, Subjects
from tests._harness import sample_corpus_worker, until
from worker.commands.sample_corpus import DEMO_CALLER, PAYMENTS
from worker.worker import Worker

DOC = yaml.safe_load((Path(__file__).resolve().parents[1] / "docs" / "asyncapi.yaml").read_text())
MESSAGES = DOC["components"]["messages"]
# The module's event loop, where the tests that only ask a worker share one (``shared``).
pytestmark = pytest.mark.asyncio(loop_scope="module")


def _validate(payload: Any, schema: str) -> None:
    whole = {**DOC["components"]["schemas"][schema], "components": DOC["components"]}
    jsonschema.validate(payload, whole, cls=jsonschema.Draft202012Validator)


def _address(subjects: Subjects, channel: str, **parameters: object) -> str:
    """The channel's documented address, on the test's own prefixes."""
    address = str(DOC["channels"][channel]["address"])
    default = Subjects()
    for ours, theirs in ((subjects.events_prefix, default.events_prefix),
                         (subjects.prefix, default.prefix)):  # fmt: skip
        if address.startswith(theirs + "."):
            address = ours + address.removeprefix(theirs)
            break
    return address.format(**parameters)


@pytest.fixture
def nc(module_nc: NATS) -> NATS:
    """The module's connection: its tests run in the module's loop, beside ``shared``."""
    return module_nc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(
    module_nc: NATS, module_subjects: Subjects, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Subjects, Worker]]:
    """A worker over the sample corpus for the tests that only ask it (each request with
    its own id), on names no other test uses."""
    tmp_path = tmp_path_factory.mktemp("served")
    async with sample_corpus_worker(module_nc, module_subjects, tmp_path) as worker:
        yield module_subjects, worker


@pytest_asyncio.fixture(loop_scope="module")
async def served(nc: NATS, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Worker]:
    """A worker of this test's own (the test adds to its stream)."""
    async with sample_corpus_worker(nc, subjects, tmp_path) as worker:
        yield worker


async def test_the_manifest_request_is_answered_with_a_manifest(
    nc: NATS, shared: tuple[Subjects, Worker]
) -> None:
    subjects, _ = shared
    reply = await nc.request(_address(subjects, "manifest"), b"", timeout=10)
    manifest = orjson.loads(reply.data)
    _validate(manifest, "Manifest")
    assert [tool["name"] for tool in manifest["tools"]] == list(TOOL_NAMES)


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_each_tool_example_is_answered_on_its_channel_and_its_partition(
    nc: NATS, shared: tuple[Subjects, Worker], tool: str
) -> None:
    subjects, _ = shared
    examples = MESSAGES[f"{tool}_request"]["examples"]
    assert examples
    manifest = orjson.loads((await nc.request(_address(subjects, "manifest"), b"")).data)
    partition = partition_of_cwd(PAYMENTS, manifest["partition_count"])
    for example in examples:
        payload = example["payload"]
        _validate(payload, f"{tool}_request")
        assert payload["execution"]["agent"]["session_id"] == DEMO_CALLER  # cwd PAYMENTS
        replies: list[str] = []
        for channel, parameters in ((tool, {}), (f"{tool}_partition", {"partition": partition})):
            sent = {**payload, "request_id": f"{payload['request_id']}-{len(replies)}"}
            address = _address(subjects, channel, **parameters)
            reply = orjson.loads((await nc.request(address, orjson.dumps(sent), timeout=20)).data)
            _validate(reply, "ToolReply")
            assert reply["status"] == "ok" and reply["request_id"] == sent["request_id"], reply
            replies.append(reply["content"])
        assert replies[0] == replies[1]


async def test_the_event_example_published_as_documented_is_indexed(
    nc: NATS, subjects: Subjects, served: Worker
) -> None:
    (example,) = MESSAGES["session_event"]["examples"]
    event = example["payload"]
    _validate(event, "SessionEvent")
    key = workspace_key(event["payload"]["cwd"])
    address = _address(
        subjects, "session_events", workspace_key=key, session_id=event["session_id"]
    )
    msg_id = f"{event['session_id']}:{event['seq']}"
    ack = await nc.jetstream().publish(
        address, orjson.dumps(event), headers={"Nats-Msg-Id": msg_id}
    )

    async def indexed() -> bool:
        return (await served.indexed_through() or 0) >= ack.seq

    await until(indexed, within=20)
    request = {
        "request_id": "r-example-new-session",
        "execution": {"agent": {"session_id": DEMO_CALLER}},
        "arguments": {"session_id": event["session_id"]},
    }
    reply = orjson.loads(
        (await nc.request(_address(subjects, "session_trace"), orjson.dumps(request))).data
    )
    assert reply["status"] == "ok" and event["session_id"] in reply["content"], reply
