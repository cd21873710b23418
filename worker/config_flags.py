"""Command-line flags for the worker's own settings, generated from their declarations
(worker/config.py); the NATS flags are ``worker.transport.flags``'s.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from contracts.subjects import Subjects
from worker.config import WorkerConfig, load, settings
from worker.settings import FlagAdder, add_setting_flags, given_flags


def add_flags(parser: FlagAdder, names: Iterable[str] | None = None) -> None:
    """A flag for each worker setting (all, or those named)."""
    wanted = None if names is None else set(names)
    add_setting_flags(parser, [s for s in settings() if wanted is None or s.name in wanted])


def config_from_args(args: argparse.Namespace) -> WorkerConfig:
    """The worker configuration with the settings given as flags (see ``add_flags``)."""
    return load(given_flags(args, settings()))


def add_subject_arguments(parser: argparse.ArgumentParser) -> None:
    """Stream and subject names, for tests and deployments with their own names."""
    add_flags(
        parser.add_argument_group("stream and subjects"),
        ("events_stream", "events_prefix", "deadletter"),
    )


def subjects_from_args(args: argparse.Namespace) -> Subjects:
    return config_from_args(args).subjects
