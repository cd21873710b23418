"""The configuration models: each setting's variable and flag give the same value, the serve
flags are exactly the settings (worker and NATS), and a bad value is one line naming what was
bad, never a secret."""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest

from worker.commands import serve
from worker.config import WorkerConfig, load, settings
from worker.config_flags import config_from_args
from worker.settings import ConfigError, Setting
from worker.tools import ToolConfig
from worker.transport.connection import NatsOptions
from worker.transport.flags import nats_settings, options_from_args


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    return parser


# Settings whose text has a form of its own: a valid value that is not the default.
_FORMED = {
    "partitions": "0-7,9",
    "embedder": "http://127.0.0.1:8000",
    "embedder_model": "e5-small",
    "redaction_patterns": "acme-key=ACME-[0-9]{8}",
    "redaction_allow": "known-test-key-1,known-test-key-2",
}


def _other_value(item: Setting) -> str:
    """A valid value, as text, that differs from the setting's default."""
    if item.name in _FORMED:
        return _FORMED[item.name]
    if get_origin(item.kind) is Literal:
        return next(str(choice) for choice in get_args(item.kind) if choice != item.default)
    if item.kind is int:
        return str(item.default + 7)
    if item.kind is Path:
        return "/tmp/elsewhere/index.sqlite"
    return f"{item.default}-other"


def _at(config: WorkerConfig, item: Setting) -> Any:
    value: Any = config
    for part in item.path:
        value = getattr(value, part)
    return value


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("SESSIONQUERY_", "NATS_")):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("item", settings(), ids=lambda item: item.name)
def test_the_variable_and_the_flag_give_the_same_setting(
    item: Setting, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _other_value(item)
    from_flag = config_from_args(_serve_parser().parse_args([item.flags[0], text]))
    monkeypatch.setenv(item.env, text)
    from_env = config_from_args(_serve_parser().parse_args([]))
    assert _at(from_flag, item) == _at(from_env, item)
    assert _at(from_flag, item) != item.default
    assert _at(WorkerConfig(), item) == item.default  # the model itself reads no variable


def test_the_serve_flags_are_exactly_the_settings() -> None:
    parser = _serve_parser()
    (group,) = [g for g in parser._action_groups if g.title == "worker configuration"]
    flags = {action.dest: tuple(action.option_strings) for action in group._group_actions}
    assert flags == {item.name: item.flags for item in settings()}
    # Every field of the model and of its tools section is a setting, and each has help.
    names = {item.name for item in settings()}
    assert set(WorkerConfig.model_fields) - {"subjects", "tools"} <= names
    assert {f.name for f in dataclasses.fields(ToolConfig)} <= names
    assert all(item.description for item in settings())
    # The names that were flags before stay flags.
    for kept in ("--db", "--max-results", "--stream", "--subject-prefix", "--readers"):
        assert any(kept in spelled for spelled in flags.values()), kept


def test_a_flag_wins_over_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONQUERY_SPILL_THRESHOLD_BYTES", "1000")
    monkeypatch.setenv("SESSIONQUERY_CATCH_UP_TIMEOUT_MS", "1500")
    config = load({"spill_threshold_bytes": "2000"})
    assert config.spill_threshold_bytes == 2000 and config.tools.catch_up_timeout_ms == 1500
    assert WorkerConfig.from_env(readers=2).readers == 2  # keyword overrides win over all


def test_an_empty_variable_leaves_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONQUERY_READERS", "")
    monkeypatch.setenv("SESSIONQUERY_SUBJECT_PREFIX", "")
    config = load()
    assert config.readers == 4 and config.subjects.prefix == "sessionquery"


def test_a_bad_variable_is_named_with_the_rule_and_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SESSIONQUERY_READERS", "many")
    with pytest.raises(ConfigError) as caught:
        load()
    assert str(caught.value) == "SESSIONQUERY_READERS must be a whole number, got 'many'"
    monkeypatch.setenv("SESSIONQUERY_READERS", "2")
    monkeypatch.setenv("SESSIONQUERY_SEARCH_TIMEOUT_MS", "soon")
    with pytest.raises(ConfigError, match=r"^SESSIONQUERY_SEARCH_TIMEOUT_MS must be a whole"):
        load()


def test_a_bad_flag_is_named_as_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONQUERY_ON_DIVERGENCE", "refuse")  # valid, so only the flag is bad
    args = _serve_parser().parse_args(["--on-divergence", "ignore", "--max-results", "1e3"])
    with pytest.raises(ConfigError) as caught:
        config_from_args(args)
    message = str(caught.value)
    assert "--on-divergence must be 'rebuild' or 'refuse', got 'ignore'" in message
    assert "--max-search-results must be a whole number, got '1e3'" in message
    assert "SESSIONQUERY_" not in message and "\n" not in message


def _cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "SESSIONQUERY_"))}
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", *argv],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_commands_print_one_line_and_exit_2_on_a_bad_setting(tmp_path: Path) -> None:
    served = _cli("serve", "--home", str(tmp_path), env={"SESSIONQUERY_READERS": "x"})
    assert served.returncode == 2
    assert served.stderr.strip().splitlines() == [
        "sessionquery serve: SESSIONQUERY_READERS must be a whole number, got 'x'"
    ]
    imported = _cli(
        "import", str(tmp_path), "--nats-url", "nats://127.0.0.1:1",
        env={"SESSIONQUERY_MAX_EVENT_BYTES": "1MB"},
    )  # fmt: skip
    assert imported.returncode == 2 and "Traceback" not in imported.stderr
    assert imported.stderr.strip().splitlines()[-1] == (
        "sessionquery import: SESSIONQUERY_MAX_EVENT_BYTES must be a whole number, got '1MB'"
    )


@pytest.mark.parametrize("item", nats_settings(), ids=lambda item: item.name)
def test_each_nats_variable_and_flag_give_the_same_option(
    item: Setting, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "3" if item.kind is int else "nats://127.0.0.1:4333"
    from_flag = options_from_args(_serve_parser().parse_args([item.flags[0], text]))
    monkeypatch.setenv(item.env, text)
    from_env = options_from_args(_serve_parser().parse_args([]))
    assert getattr(from_flag, item.name) == getattr(from_env, item.name) == int_or_text(text)


def int_or_text(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def test_the_nats_flags_are_exactly_the_nats_settings() -> None:
    (group,) = [g for g in _serve_parser()._action_groups if g.title == "NATS"]
    flags = {tuple(action.option_strings) for action in group._group_actions}
    assert flags == {item.flags for item in nats_settings()}
    assert {item.name for item in nats_settings()} == {
        f.name for f in dataclasses.fields(NatsOptions) if f.name != "name"
    }


def test_a_nats_secret_is_in_neither_help_nor_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATS_URL", "nats://sq:hunter2-url@127.0.0.1:4222")
    monkeypatch.setenv("NATS_PASSWORD", "hunter2-password")
    monkeypatch.setenv("NATS_TOKEN", "hunter2-token")
    monkeypatch.setenv("SESSIONQUERY_CONNECT_ATTEMPTS", "twice")
    parser = _serve_parser()
    assert "hunter2" not in parser.format_help()
    with pytest.raises(ConfigError) as caught:
        options_from_args(parser.parse_args([]))
    assert str(caught.value) == "SESSIONQUERY_CONNECT_ATTEMPTS must be a whole number, got 'twice'"
    with pytest.raises(ConfigError) as caught:
        options_from_args(parser.parse_args(["--connect-attempts", "many"]))
    assert str(caught.value) == "--connect-attempts must be a whole number, got 'many'"


def test_the_embedders_url_is_in_neither_help_nor_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--embedder`` may carry a user and password, like a NATS URL."""
    monkeypatch.setenv("SESSIONQUERY_EMBEDDER", "http://sq:hunter2-embed@10.0.0.5:8000")
    monkeypatch.setenv("SESSIONQUERY_EMBEDDER_BATCH", "0")
    parser = _serve_parser()
    assert "hunter2" not in parser.format_help()
    assert "--embedder-concurrency" in parser.format_help()
    with pytest.raises(ConfigError) as caught:
        config_from_args(parser.parse_args([]))
    assert "SESSIONQUERY_EMBEDDER_BATCH" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_redaction_settings_are_checked_and_the_allow_list_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match="--redaction-patterns") as bad:
        load({"redaction_patterns": "acme-key=ACME-(unclosed"})
    assert "does not compile" in str(bad.value)
    config = load({"redaction_patterns": "a-key=A[0-9]{4};;b-key=(?P<secret>B[0-9]{4})"})
    assert config.redaction_spec().extra == (
        ("a-key", "A[0-9]{4}"),
        ("b-key", "(?P<secret>B[0-9]{4})"),
    )
    allowed = "sk-live-looking-value-0123456789"
    assert load({"redaction_allow": f" {allowed} ,x"}).redaction_spec().allow == (allowed, "x")
    help_text = _serve_parser().format_help()
    assert "--redaction-allow" in help_text
    monkeypatch.setenv("SESSIONQUERY_REDACTION_ALLOW", allowed)
    assert allowed not in _serve_parser().format_help()
