"""A setting's declaration, its command-line flag and its one-line error: what the worker's
settings (``worker.config``) and the NATS settings (``worker.transport.flags``) share.

Each flag's value stays text until it is loaded with the environment, so a flag and its
variable are parsed by one model and give the same setting; help comes from the
description, with the variable and the current default (never a secret's value).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, get_args, get_origin

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from worker.failures import RuntimeFailure


@dataclass(frozen=True)
class Setting:
    """One setting: its variable and flags set the model's field at ``path``."""

    name: str
    path: tuple[str, ...]
    kind: Any
    default: Any
    description: str
    env: str
    flags: tuple[str, ...]
    secret: bool = False  # never shown: not its value in help, nor in an error


class ConfigError(RuntimeFailure, ValueError):
    """A bad setting: one line naming the flag or variable, the rule and the value."""


def explain(exc: ValidationError, flags: Mapping[str, str], table: Iterable[Setting]) -> str:
    """One line: each bad setting by the flag it was given as, else by its variable."""
    # A field read through an alias is reported at the alias: its variable's name.
    by_path = {path: item for item in table for path in (item.path, (item.env,))}
    lines = []
    for error in exc.errors():
        item = by_path.get(tuple(str(part) for part in error["loc"]))
        if item is None:
            lines.append(f"{'.'.join(map(str, error['loc']))}: {error['msg']}")
            continue
        where = item.flags[0] if item.name in flags else item.env
        got = "" if item.secret else f", got {error.get('input')!r}"
        lines.append(f"{where} {_rule(error)}{got}")
    return "; ".join(lines)


def _rule(error: ErrorDetails) -> str:
    kind = error["type"]
    if kind.startswith("int_"):
        return "must be a whole number"
    if kind == "literal_error":
        return f"must be {error.get('ctx', {}).get('expected', 'one of its choices')}"
    return f"is not valid ({error['msg']})"


class FlagAdder(Protocol):
    """An argparse parser or argument group."""

    def add_argument(self, *names: str, **kwargs: Any) -> Any: ...


def add_setting_flags(
    parser: FlagAdder, table: Iterable[Setting], *, dest_prefix: str = ""
) -> None:
    for item in table:
        shown = item.default if item.secret else os.environ.get(item.env) or item.default
        default = "" if shown is None else f", default {shown}"
        parser.add_argument(
            *item.flags,
            dest=flag_dest(item, dest_prefix),
            default=None,
            metavar=_metavar(item.kind),
            help=f"{item.description} (env {item.env}{default})".replace("%", "%%"),
        )


def given_flags(
    args: argparse.Namespace, table: Iterable[Setting], *, dest_prefix: str = ""
) -> dict[str, str]:
    out = {}
    for item in table:
        value = getattr(args, flag_dest(item, dest_prefix), None)
        if value is not None:
            out[item.name] = value
    return out


def flag_dest(item: Setting, prefix: str) -> str:
    # connect_attempts was never --nats-connect-attempts: its flag names its dest.
    return item.flags[0].removeprefix("--").replace("-", "_") if prefix else item.name


def _metavar(kind: Any) -> str:
    if get_origin(kind) is Literal:
        return "{" + ",".join(map(str, get_args(kind))) + "}"
    return {int: "N", Path: "PATH"}.get(kind, "TEXT")
