"""``sessionquery ui``: a local web page for people, over the worker's operator subjects.

A requester like the MCP bridge: it talks to the workers over NATS only (never the index
file), on ``<prefix>.operator.<verb>``, and is never imported by the worker.
"""
