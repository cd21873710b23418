"""Command-line flags generated from the settings' declarations (worker/runtime/config.py).

Each flag's value stays text until it is loaded with the environment, so a flag and its
variable are parsed by one model and give the same setting; help comes from the
description, with the variable and the current default (never a secret's value).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, get_origin

from worker.runtime.config import (
    Setting,
    WorkerConfig,
    load,
    load_nats,
    nats_settings,
    settings,
)

if TYPE_CHECKING:
    from worker.runtime.connection import NatsOptions


class _Adder(Protocol):
    def add_argument(self, *names: str, **kwargs: Any) -> Any: ...


def add_flags(parser: _Adder, names: Iterable[str] | None = None) -> None:
    """A flag for each worker setting (all, or those named)."""
    wanted = None if names is None else set(names)
    _add(parser, [s for s in settings() if wanted is None or s.name in wanted])


def config_from_args(args: argparse.Namespace) -> WorkerConfig:
    """The worker configuration with the settings given as flags (see ``add_flags``)."""
    return load(_given(args, settings()))


def add_nats_flags(parser: _Adder) -> None:
    _add(parser, nats_settings(), dest_prefix="nats_")


def nats_options_from_args(args: argparse.Namespace) -> NatsOptions:
    from worker.runtime.connection import NatsOptions

    loaded = load_nats(_given(args, nats_settings(), dest_prefix="nats_"))
    return NatsOptions(**loaded.model_dump())


def _add(parser: _Adder, table: Iterable[Setting], *, dest_prefix: str = "") -> None:
    for item in table:
        shown = item.default if item.secret else os.environ.get(item.env) or item.default
        default = "" if shown is None else f", default {shown}"
        parser.add_argument(
            *item.flags,
            dest=_dest(item, dest_prefix),
            default=None,
            metavar=_metavar(item.kind),
            help=f"{item.description} (env {item.env}{default})".replace("%", "%%"),
        )


def _given(
    args: argparse.Namespace, table: Iterable[Setting], *, dest_prefix: str = ""
) -> dict[str, str]:
    out = {}
    for item in table:
        value = getattr(args, _dest(item, dest_prefix), None)
        if value is not None:
            out[item.name] = value
    return out


def _dest(item: Setting, prefix: str) -> str:
    # connect_attempts was never --nats-connect-attempts: its flag names its dest.
    return item.flags[0].removeprefix("--").replace("-", "_") if prefix else item.name


def _metavar(kind: Any) -> str:
    if get_origin(kind) is Literal:
        return "{" + ",".join(map(str, get_args(kind))) + "}"
    return {int: "N", Path: "PATH"}.get(kind, "TEXT")
