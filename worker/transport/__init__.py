"""Talking to NATS: the connection and its flags, the embedded nats-server, the micro protocol.

The only place a NATS connection is made. Requesters (importers, the MCP bridge, the UI,
``call``) import this package and ``contracts``, nothing of the worker's insides.
"""
