"""worker.transport.micro speaks the micro protocol: its $SRV documents are the ones nats-py's
own micro models read and write, field for field, and its endpoints keep their limits."""

from __future__ import annotations

import json

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.micro.service import ServiceInfo, ServicePing, ServiceStats

from worker.transport.micro import EndpointSpec, MicroService
from worker.transport.pending import PendingLimits


async def _document(nc: NATS, subject: str) -> dict[str, object]:
    reply = await nc.request(subject, b"", timeout=5)
    value = json.loads(reply.data)
    assert isinstance(value, dict)
    return value


async def test_discovery_documents_match_the_micro_models(nc: NATS, unique: str) -> None:
    name = f"micro-test-{unique}"

    async def echo(msg: Msg) -> None:
        await nc.publish(msg.reply, msg.data)

    def hook(endpoint: str) -> tuple[int, str | None, object]:
        return 2, "404:gone", {"endpoint": endpoint}

    service = MicroService(
        nc, name=name, version="1.2.3", description="d", metadata={"k": "v"}, stats_hook=hook
    )
    await service.start()
    spec = EndpointSpec(name="echo", subject=f"{name}.echo", handler=echo, metadata={"m": "1"})
    await service.add_endpoint(spec, PendingLimits(msgs=7, bytes=4096))
    try:
        assert (await nc.request(f"{name}.echo", b"hi", timeout=5)).data == b"hi"
        ping = await _document(nc, f"$SRV.PING.{name}")
        info = await _document(nc, f"$SRV.INFO.{name}.{service.id}")
        stats = await _document(nc, f"$SRV.STATS.{name}")
        # nats-py's models, read and written again, give back the very same documents.
        assert ServicePing.from_dict(ping).to_dict() == ping
        assert ServiceInfo.from_dict(info).to_dict() == info
        assert ServiceStats.from_dict(stats).to_dict() == stats
        assert info["endpoints"] == [
            {"name": "echo", "subject": f"{name}.echo", "queue_group": "q", "metadata": {"m": "1"}}
        ]
        endpoint = stats["endpoints"][0]  # type: ignore[index]
        assert endpoint["num_requests"] == 1 and endpoint["num_errors"] == 2
        assert endpoint["last_error"] == "404:gone"
        assert endpoint["data"] == {"endpoint": "echo"}
        assert service.pending_limits("echo") == (7, 4096)
        await service.drain_endpoints()
        assert service.pending_limits("echo") is None
    finally:
        await service.stop()
