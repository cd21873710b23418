"""NATS permissions keep the operator subjects for operators: a real nats-server runs
deploy/nats-accounts.conf (the deployment's own file), a worker serves as the worker user,
an agent runtime's credentials are refused the operator subjects (a permissions violation,
no answer) while the operator's are answered, the operator cannot call the tools, and
sessionquery ui connected as the operator (its default inbox prefix) serves its pages."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from contracts.subjects import Subjects
from deploy.local_cluster import ACCOUNTS_CONF, OPERATOR_INBOX_PREFIX, RUNTIME_INBOX_PREFIX
from tests._harness import sample_corpus_worker
from tests.ui.conftest import Ui
from worker.commands.sample_corpus import PAYMENTS
from worker.transport.connection import open_connection
from worker.transport.embedded_server import EmbeddedNatsServer

PASSWORDS = {user: "pw" + secrets.token_hex(12) for user in ("worker", "runtime", "operator")}
INBOXES = {"runtime": RUNTIME_INBOX_PREFIX, "operator": OPERATOR_INBOX_PREFIX}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedNatsServer]:
    env = {f"SESSIONQUERY_{u.upper()}_PASSWORD": pw for u, pw in PASSWORDS.items()}
    nats = EmbeddedNatsServer(
        store_dir=tmp_path / "nats", extra_args=("-c", str(ACCOUNTS_CONF)), env=env
    )
    nats.start()
    try:
        yield nats
    finally:
        nats.stop()


async def _connect(url: str, user: str, errors: list[str]) -> NATS:
    async def error_cb(exc: Exception) -> None:
        errors.append(str(exc))

    extra: dict[str, Any] = {"inbox_prefix": INBOXES[user]} if user in INBOXES else {}
    return await open_connection(
        servers=[url], user=user, password=PASSWORDS[user], error_cb=error_cb,
        max_reconnect_attempts=2, connect_timeout=5, **extra,
    )  # fmt: skip


@pytest.fixture
async def clients(server: EmbeddedNatsServer, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    errors: dict[str, list[str]] = {u: [] for u in PASSWORDS}
    conns = {u: await _connect(server.url, u, errors[u]) for u in PASSWORDS}
    try:
        async with sample_corpus_worker(conns["worker"], Subjects(), tmp_path):
            yield {"nc": conns, "errors": errors}
    finally:
        for nc in conns.values():
            await nc.close()


async def _ask(nc: NATS, subject: str, body: bytes, wait_s: float = 2.0) -> bytes | None:
    try:
        return (await nc.request(subject, body, timeout=wait_s)).data
    except (NatsTimeout, NoRespondersError):
        return None


async def _violation(errors: list[str], subject: str) -> bool:
    for _ in range(100):  # the server's -ERR arrives asynchronously
        if any("permissions violation" in e.lower() and subject in e for e in errors):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_agents_cannot_call_the_operator_subjects_operators_can(
    clients: dict[str, Any],
) -> None:
    subjects = Subjects()
    nc, errors = clients["nc"], clients["errors"]
    body = orjson.dumps({"arguments": {}})
    refused = await _ask(nc["runtime"], subjects.operator("workspaces"), body)
    assert refused is None
    assert await _violation(errors["runtime"], subjects.operator("workspaces"))
    # The same runtime is otherwise served: it reads the manifest.
    manifest = await _ask(nc["runtime"], subjects.manifest, b"", wait_s=5)
    assert manifest is not None and b"session_search" in manifest

    answered = await _ask(nc["operator"], subjects.operator("workspaces"), body, wait_s=10)
    assert answered is not None
    reply = orjson.loads(answered)
    assert reply["status"] == "ok"
    assert PAYMENTS in {w["cwd"] for w in reply["result"]["workspaces"]}
    assert errors["operator"] == []

    # And an operator is not an agent: the tool subjects are refused to it.
    tool = subjects.tool("session_search")
    call = orjson.dumps({"request_id": "r-1", "execution": {"agent": {"session_id": "s-x"}},
                         "arguments": {"query": "refund"}})  # fmt: skip
    assert await _ask(nc["operator"], tool, call) is None
    assert await _violation(errors["operator"], tool)


async def test_the_ui_as_the_operator_user_is_served(
    server: EmbeddedNatsServer, clients: dict[str, Any]
) -> None:
    """``sessionquery ui``'s own connection (its default inbox prefix) with the operator's
    credentials: the page is answered through those permissions."""
    from worker.commands.ui import OPERATOR_INBOX_PREFIX as UI_INBOX
    from worker.transport.connection import NatsOptions, connect_reporting
    from worker.ui.server import UiServer

    options = NatsOptions(url=server.url, user="operator", password=PASSWORDS["operator"])

    async def connect() -> NATS:
        return await connect_reporting(options, attempts=1, inbox_prefix=UI_INBOX)

    ui = await asyncio.to_thread(UiServer.start, connect, Subjects())
    try:
        page = Ui(ui)
        status, _, body = await page.get("/", cookie=await page.cookie())
        assert status == 200 and PAYMENTS in body
    finally:
        await asyncio.to_thread(ui.stop)
