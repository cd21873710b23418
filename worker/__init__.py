"""The session query worker: store (index), tools (model-facing), runtime (NATS)."""
