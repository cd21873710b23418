"""The runtime's one exception root; ``worker.errors`` draws the whole tree.

Runtime failures are operational (connecting, serving, configuring, continuity): they are
told to the operator (a log line, an exit message), never to a model. A tool request's
failures reach the model only through the tools' error table (``worker.tools.errors``).
"""


class RuntimeFailure(Exception):
    """Base of the runtime's own failures. Subclasses that also were a ``ValueError`` or
    ``RuntimeError`` keep that base, so existing ``except`` clauses still catch them."""
