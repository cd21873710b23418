"""Worker configuration: one frozen dataclass, set by keyword, flags or ``SESSIONQUERY_*``.

``WorkerConfig.from_env()`` reads ``SESSIONQUERY_<FIELD>`` (upper case) for every scalar
field; explicit keyword overrides win over the environment.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contracts.limits import MAX_EVENT_BYTES
from contracts.subjects import Subjects
from worker.tools import ToolConfig

ENV_PREFIX = "SESSIONQUERY_"


@dataclass(frozen=True)
class WorkerConfig:
    db_path: Path = Path(".sessionquery/index.sqlite")
    subjects: Subjects = field(default_factory=Subjects)
    tools: ToolConfig = field(default_factory=ToolConfig)
    # Store
    readers: int = 4
    text_cap_bytes: int = 64 * 1024
    # Never above the server's max_payload minus the header allowance (contracts.limits).
    max_event_bytes: int = MAX_EVENT_BYTES
    max_event_window: int = 50
    # Ingestion
    ingest_batch_size: int = 500
    ingest_batch_ms: int = 50
    # Where the index writer runs: "process" (a child process, so ingestion uses two cores)
    # or "thread" (a thread of the worker: one core, no child process).
    ingest_writer: str = "process"
    # When the index does not match the stream (re-created, reset, or a gap): "rebuild"
    # it from the stream into a new file and swap it in, or "refuse" to serve.
    on_divergence: str = "rebuild"
    # Parallel lane (traces and reads): running slots, plus waiting slots before OVERLOADED.
    parallel_pool_size: int = 8
    parallel_queue_size: int = 32
    # Requests received but not yet handled, per subscription (tool and manifest endpoints,
    # cancels, the search pull): past either limit nats-py drops the message as a slow
    # consumer and a dropped tool request is answered OVERLOADED (runtime/slow_consumers.py).
    # The byte limit is raised to twice the server's max_payload when below it.
    endpoint_pending_msgs: int = 2048
    endpoint_pending_bytes: int = 8 * 1024 * 1024
    # Default deadline for a trace or read whose request carries none.
    exact_timeout_ms: int = 30_000
    # Search lane (JetStream work queue, one durable pull consumer shared by the fleet).
    search_max_ack_pending: int = 64
    search_max_deliver: int = 3
    search_ack_wait_ms: int = 30_000
    # Searches waiting in the work-queue stream before enqueueing answers OVERLOADED.
    search_queue_max_msgs: int = 10_000
    # Replicas of the streams and bucket the runtime creates (3 on a 3-node cluster).
    stream_replicas: int = 1
    # Spill
    spill_threshold_bytes: int = 64 * 1024
    spill_preview_bytes: int = 4 * 1024
    spill_ttl_s: int = 24 * 3600
    # Graceful stop: in-flight work gets this long before it is cancelled.
    shutdown_grace_ms: int = 10_000
    # SIGTERM to exit, whatever ingestion or a request is doing: past it the process exits
    # anyway (nothing is lost: ingestion resumes from the index's stored stream sequence).
    shutdown_timeout_ms: int = 15_000
    # Service discovery
    service_version: str = "0.1.0"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> WorkerConfig:
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        tool_values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None and f.name not in ("subjects", "tools"):
                values[f.name] = _coerce(f.type, raw, f.name)
        for f in dataclasses.fields(ToolConfig):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None:
                tool_values[f.name] = _coerce(f.type, raw, f.name)
        if prefix := env.get(ENV_PREFIX + "SUBJECT_PREFIX"):
            values["subjects"] = Subjects(prefix=prefix)
        if tool_values:
            values["tools"] = ToolConfig(**tool_values)
        values.update(overrides)
        return cls(**values)


def _coerce(annotation: object, raw: str, name: str) -> Any:
    kind = str(annotation)
    try:
        if kind in ("int", "<class 'int'>"):
            return int(raw)
        if kind in ("Path", "<class 'pathlib.Path'>"):
            return Path(raw)
    except ValueError:
        raise ValueError(f"{ENV_PREFIX}{name.upper()} must be an integer, got {raw!r}") from None
    return raw
