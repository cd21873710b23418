"""The UI's HTML, rendered on the server from the operator replies: one module per page."""

from worker.ui.pages._markup import error_page, login_page
from worker.ui.pages.event import event
from worker.ui.pages.lineage import lineage
from worker.ui.pages.operations import operations
from worker.ui.pages.search import search, search_refused
from worker.ui.pages.sessions import (
    EVENT_TYPE_PATTERN,
    MAX_QUERY,
    SURFACES,
    sessions,
    workspaces,
)
from worker.ui.pages.timeline import timeline

__all__ = [
    "EVENT_TYPE_PATTERN",
    "MAX_QUERY",
    "SURFACES",
    "error_page",
    "event",
    "lineage",
    "login_page",
    "operations",
    "search",
    "search_refused",
    "sessions",
    "timeline",
    "workspaces",
]
