"""The operator subjects (``<prefix>.operator.<verb>``) over a real worker and stream: each
verb reads through the worker, scoped to the workspace it names, with the tools' search."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from contracts.subjects import OPERATOR_SERVICE_NAME, Subjects
from tests._harness import sample_corpus_worker
from tests.ui._operator import ask, result
from worker.commands.sample_corpus import (
    PAY_CHILD,
    PAY_GRANDCHILD,
    PAY_ROOT,
    PAY_SIBLING,
    PAYMENTS,
    WEB_ROOT,
    WEBSITE,
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
    tmp_path = tmp_path_factory.mktemp("operator")
    async with sample_corpus_worker(module_nc, module_subjects, tmp_path) as w:
        yield w


async def test_every_verb_answers_from_the_worker(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    spaces = await result(nc, subjects, "workspaces")
    by_cwd = {w["cwd"]: w for w in spaces["workspaces"]}
    assert set(by_cwd) == {PAYMENTS, WEBSITE}
    assert by_cwd[PAYMENTS]["sessions"] == 4

    listed = await result(
        nc, subjects, "sessions", workspace=PAYMENTS, sort="created", descending=False
    )
    ids = [s["session_id"] for s in listed["sessions"]]
    assert ids[0] == PAY_ROOT and set(ids) == {PAY_ROOT, PAY_CHILD, PAY_GRANDCHILD, PAY_SIBLING}
    root = listed["sessions"][0]
    assert root["children"] == 2 and root["title"] == "Fix flaky refund idempotency test"
    paged = await result(
        nc,
        subjects,
        "sessions",
        workspace=PAYMENTS,
        limit=1,
        offset=1,
        sort="created",
        descending=False,
    )
    assert [s["session_id"] for s in paged["sessions"]] == [ids[1]] and paged["total"] == 4
    roots = await result(nc, subjects, "sessions", workspace=PAYMENTS, roots_only=True)
    assert [s["session_id"] for s in roots["sessions"]] == [PAY_ROOT]
    live = await result(nc, subjects, "sessions", workspace=PAYMENTS, availability=["live"])
    assert [s["session_id"] for s in live["sessions"]] == [PAY_GRANDCHILD]
    titled = await result(nc, subjects, "sessions", workspace=PAYMENTS, title_contains="WEBHOOK")
    assert {s["session_id"] for s in titled["sessions"]} == {PAY_CHILD, PAY_GRANDCHILD}
    children = await result(nc, subjects, "sessions", workspace=PAYMENTS,
                            parent_session_ids=[PAY_ROOT])  # fmt: skip
    assert {s["session_id"] for s in children["sessions"]} == {PAY_CHILD, PAY_SIBLING}

    lineage = await result(nc, subjects, "lineage", workspace=PAYMENTS, session_id=PAY_CHILD)
    edges = {(e["parent"], e["child"]) for e in lineage["edges"]}
    # The whole tree it belongs to: the root's other child (a sibling fork) too.
    assert edges == {(PAY_ROOT, PAY_CHILD), (PAY_CHILD, PAY_GRANDCHILD), (PAY_ROOT, PAY_SIBLING)}
    assert lineage["target"] == PAY_CHILD

    ops = await result(nc, subjects, "operations")
    assert ops["index"]["lag_events"] == 0 and ops["index"]["matches_stream"] is True
    assert ops["dead_letters"] == []


async def test_search_is_the_tools_search_in_the_named_workspace(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    found = await result(nc, subjects, "search", workspace=PAYMENTS, query="idempotency")
    assert found["hits"], found
    assert {h["session"]["cwd"] for h in found["hits"]} == {PAYMENTS}
    assert any("[" in h["excerpt"] for h in found["hits"])
    # A word only the other workspace holds: nothing here, and no hint of it.
    hugo = await result(nc, subjects, "search", workspace=PAYMENTS, query="hugo")
    assert all(h["session"]["cwd"] == PAYMENTS for h in hugo["hits"])
    web = await result(nc, subjects, "search", workspace=WEBSITE, query="hugo")
    assert web["hits"] and {h["session"]["cwd"] for h in web["hits"]} == {WEBSITE}
    inside = await result(
        nc, subjects, "search", workspace=PAYMENTS, query="refund", session_id=PAY_ROOT
    )
    assert inside["hits"] and inside["session"]["session_id"] == PAY_ROOT


async def test_another_workspaces_session_answers_as_a_missing_one(
    nc: NATS, worker: Worker
) -> None:
    subjects = worker.config.subjects
    for verb, extra in (
        ("timeline", {}),
        ("lineage", {}),
        ("event", {"seq": 1}),
        ("relations", {"seq": 1}),
        ("search", {"query": "hugo"}),
    ):
        foreign = await ask(nc, subjects, verb, workspace=PAYMENTS, session_id=WEB_ROOT, **extra)
        missing = await ask(nc, subjects, verb, workspace=PAYMENTS, session_id="s-nope", **extra)
        assert foreign["status"] == "error", (verb, foreign)
        assert foreign["error"]["code"] == "SESSION_QUERY_NOT_FOUND"
        same = orjson.dumps(foreign).replace(WEB_ROOT.encode(), b"ID")
        assert same == orjson.dumps(missing).replace(b"s-nope", b"ID"), verb


async def test_timeline_pages_in_order_and_marks_replacements(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    first = await result(nc, subjects, "timeline", workspace=PAYMENTS, session_id=PAY_ROOT, limit=5)
    seqs = [e["seq"] for e in first["events"]]
    assert seqs == [1, 2, 3, 4, 5] and first["next_seq"] == 6
    rest = await result(
        nc, subjects, "timeline", workspace=PAYMENTS, session_id=PAY_ROOT, from_seq=6, limit=50
    )
    assert rest["events"][0]["seq"] == 6 and rest["next_seq"] is None
    replaced = [e for e in [*first["events"], *rest["events"]] if e["replaced_by"]]
    assert replaced and 5 in {e["seq"] for e in replaced}
    one = await result(nc, subjects, "event", workspace=PAYMENTS, session_id=PAY_ROOT, seq=2)
    assert orjson.loads(one["text"])["seq"] == 2 and one["size"] == len(one["text"])
    relations = await result(
        nc, subjects, "relations", workspace=PAYMENTS, session_id=PAY_ROOT, seq=5
    )
    assert relations["replaced_by"]


async def test_bad_arguments_are_refused_precisely(nc: NATS, worker: Worker) -> None:
    subjects = worker.config.subjects
    reply = await ask(nc, subjects, "sessions", workspace=PAYMENTS, sort="drop table")
    assert reply["error"]["code"] == "SESSION_QUERY_INVALID_ARGUMENTS"
    reply = await ask(nc, subjects, "sessions", workspace=PAYMENTS, surprise=1)
    assert reply["error"]["code"] == "SESSION_QUERY_INVALID_ARGUMENTS"
    msg = await nc.request(subjects.operator("workspaces"), b"not json", timeout=5)
    assert orjson.loads(msg.data)["error"]["code"] == "SESSION_QUERY_INVALID_ARGUMENTS"


async def test_the_operator_service_is_discoverable(nc: NATS, worker: Worker) -> None:
    msg = await nc.request(f"$SRV.INFO.{OPERATOR_SERVICE_NAME}", b"", timeout=5)
    info = orjson.loads(msg.data)
    subjects = {e["subject"] for e in info["endpoints"]}
    assert worker.config.subjects.operator("search") in subjects
