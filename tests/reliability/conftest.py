"""The rig the index-versus-stream fault tests start from (see ``_faults.Rig``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.reliability._faults import Rig, open_rig
from tests.reliability._serve import kill_left_running
from worker.transport.embedded_server import EmbeddedNatsServer


@pytest.fixture
async def rig(own_nats_server: EmbeddedNatsServer, tmp_path: Path) -> AsyncIterator[Rig]:
    async with open_rig(own_nats_server.url, tmp_path) as made:
        yield made


@pytest.fixture(autouse=True)
def _no_serve_left_running() -> Iterator[None]:
    """A test that failed before stopping its ``serve`` leaves nothing running."""
    yield
    kill_left_running()
