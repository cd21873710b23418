"""``sessionquery mcp``: the five tools for any MCP client, as a requester over NATS.

Needs the optional ``mcp`` extra. The worker never imports this package: the bridge talks
to it only through the tool subjects, the manifest and the spill store, like any runtime.
"""
