"""The rig the index-versus-stream fault tests start from (see ``_faults.Rig``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.reliability._faults import Rig, open_rig
from worker.transport.embedded_server import EmbeddedNatsServer


@pytest.fixture
async def rig(own_nats_server: EmbeddedNatsServer, tmp_path: Path) -> AsyncIterator[Rig]:
    async with open_rig(own_nats_server.url, tmp_path) as made:
        yield made
