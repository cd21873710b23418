"""How every command reaches NATS: ``NATS_*`` variables and ``--nats-*`` flags, declared once.

Requesters (importers, the MCP bridge, the UI, ``call``) take their connection flags from
here; nothing in it knows the worker's own settings.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, Final

from pydantic import AliasChoices, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from worker.settings import ConfigError, Setting, add_setting_flags, explain, given_flags
from worker.transport.connection import NatsOptions

DEFAULT_CONNECT_ATTEMPTS: Final = 10
# Its one variable, without the NATS_ prefix, as it always was.
_CONNECT_ATTEMPTS_ENV: Final = "SESSIONQUERY_CONNECT_ATTEMPTS"


class NatsSettings(BaseSettings):
    """How every command reaches NATS: ``NATS_*`` variables, ``--nats-*`` flags."""

    model_config = SettingsConfigDict(
        env_prefix="NATS_", env_ignore_empty=True, frozen=True, extra="forbid"
    )

    url: str | None = Field(None, description="server URL; comma-separated for a cluster")
    user: str | None = Field(None, description="user name")
    password: str | None = Field(None, description="password")
    token: str | None = Field(None, description="token")
    nkey_seed: str | None = Field(None, description="nkey seed file")
    creds: str | None = Field(None, description="credentials (.creds) file")
    tls_ca: str | None = Field(None, description="CA certificate file (TLS)")
    tls_cert: str | None = Field(None, description="client certificate file (TLS)")
    tls_key: str | None = Field(None, description="client key file (TLS)")
    connect_attempts: int = Field(
        DEFAULT_CONNECT_ATTEMPTS,
        validation_alias=AliasChoices(_CONNECT_ATTEMPTS_ENV),
        description="attempts to connect at start before exiting non-zero; 0 tries forever",
    )


# Never shown in help or an error: a URL may carry a user and password.
_NATS_SECRETS: Final = frozenset({"url", "password", "token"})


@functools.cache
def nats_settings() -> tuple[Setting, ...]:
    out = []
    for name, field in NatsSettings.model_fields.items():
        env, flag = "NATS_" + name.upper(), "--nats-" + name.replace("_", "-")
        if name == "connect_attempts":
            env, flag = _CONNECT_ATTEMPTS_ENV, "--connect-attempts"
        kind = int if name == "connect_attempts" else str
        item = Setting(name, (name,), kind, field.default, field.description or "", env, (flag,))
        out.append(dataclasses.replace(item, secret=name in _NATS_SECRETS))
    return tuple(out)


def load_nats(flags: Mapping[str, str | None]) -> NatsSettings:
    """``NATS_*`` settings from flags (setting name -> text), over variables, over defaults."""
    given = {name: value for name, value in flags.items() if value is not None}
    # A field with an alias is given by it (the alias is its variable's name).
    init: dict[str, Any] = {
        _CONNECT_ATTEMPTS_ENV if name == "connect_attempts" else name: value
        for name, value in given.items()
    }
    try:
        return NatsSettings(**init)
    except ValidationError as exc:
        raise ConfigError(explain(exc, given, nats_settings())) from None


def add_nats_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--nats-*`` flags (and ``--connect-attempts``), from the settings' declarations."""
    add_setting_flags(parser.add_argument_group("NATS"), nats_settings(), dest_prefix="nats_")


def options_from_args(args: argparse.Namespace) -> NatsOptions:
    """Flags over ``NATS_*`` variables over defaults (worker/config.py)."""
    loaded = load_nats(given_flags(args, nats_settings(), dest_prefix="nats_"))
    return NatsOptions(**loaded.model_dump())
