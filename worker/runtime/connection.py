"""Connecting to NATS: one set of flags for every command, with ``NATS_*`` env fallbacks.

Auth: user/password, token, nkey seed file, creds file, TLS (CA, client cert and key).
"""

from __future__ import annotations

import argparse
import os
import ssl
from dataclasses import dataclass
from typing import Any

import nats
from nats.aio.client import Client as NATS


@dataclass(frozen=True)
class NatsOptions:
    url: str | None = None  # None: the caller decides (serve starts an embedded server)
    user: str | None = None
    password: str | None = None
    token: str | None = None
    nkey_seed: str | None = None  # path to an nkey seed file
    creds: str | None = None  # path to a .creds file
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    name: str = "sessionquery"

    def with_url(self, url: str) -> NatsOptions:
        from dataclasses import replace

        return replace(self, url=url)


def add_nats_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("NATS")
    group.add_argument("--nats-url", default=os.environ.get("NATS_URL"), help="env NATS_URL")
    group.add_argument("--nats-user", default=os.environ.get("NATS_USER"))
    group.add_argument("--nats-password", default=os.environ.get("NATS_PASSWORD"))
    group.add_argument("--nats-token", default=os.environ.get("NATS_TOKEN"))
    group.add_argument("--nats-nkey-seed", default=os.environ.get("NATS_NKEY_SEED"))
    group.add_argument("--nats-creds", default=os.environ.get("NATS_CREDS"))
    group.add_argument("--nats-tls-ca", default=os.environ.get("NATS_TLS_CA"))
    group.add_argument("--nats-tls-cert", default=os.environ.get("NATS_TLS_CERT"))
    group.add_argument("--nats-tls-key", default=os.environ.get("NATS_TLS_KEY"))


def options_from_args(args: argparse.Namespace) -> NatsOptions:
    return NatsOptions(
        url=args.nats_url,
        user=args.nats_user,
        password=args.nats_password,
        token=args.nats_token,
        nkey_seed=args.nats_nkey_seed,
        creds=args.nats_creds,
        tls_ca=args.nats_tls_ca,
        tls_cert=args.nats_tls_cert,
        tls_key=args.nats_tls_key,
    )


async def connect(options: NatsOptions, **extra: Any) -> NATS:
    """Connect with reconnects forever: a worker outlives NATS restarts."""
    if options.url is None:
        raise ValueError("no NATS URL: pass --nats-url or set NATS_URL")
    kwargs: dict[str, Any] = {
        "servers": [u.strip() for u in options.url.split(",")],
        "name": options.name,
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 0.5,
        "connect_timeout": 5,
    }
    if options.user:
        kwargs["user"] = options.user
        kwargs["password"] = options.password
    if options.token:
        kwargs["token"] = options.token
    if options.nkey_seed:
        kwargs["nkeys_seed"] = options.nkey_seed
    if options.creds:
        kwargs["user_credentials"] = options.creds
    if options.tls_ca or options.tls_cert:
        context = ssl.create_default_context(cafile=options.tls_ca)
        if options.tls_cert:
            context.load_cert_chain(options.tls_cert, options.tls_key)
        kwargs["tls"] = context
    kwargs.update(extra)
    return await open_connection(**kwargs)


async def open_connection(
    servers: str | list[str] = "nats://127.0.0.1:4222", **kwargs: Any
) -> NATS:
    """``nats.connect`` followed by a flush.

    Without the flush, the first request on a fresh connection is sometimes answered "no
    responders" although the responder's subscription is in place (about 1 in 20 first
    requests against nats-server 2.15 on loopback; none in 200 after a flush).
    """
    nc = await nats.connect(servers, **kwargs)
    await nc.flush()
    return nc
