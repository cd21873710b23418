"""The NATS runtime: service registration, lanes, cancellation, spill, embedded server."""
