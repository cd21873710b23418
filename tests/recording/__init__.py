"""Fixtures recorded from the real agents: a scripted model server on 127.0.0.1 that replays a
script in each provider's wire dialect, and a recorder that runs each agent against it inside a
network namespace with only the loopback up (``python -m tests.recording.record AGENT``)."""
