"""The operator verbs' arguments: validated strictly (unknown fields refused), bounded so a
reply stays under NATS's default 1 MiB payload."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

# What a page asks for at most: a session list page, search page, timeline page.
MAX_PAGE: Final = 100
# Characters of an event's raw JSON a timeline shows before it cuts (the rest is paged).
TIMELINE_CUT: Final = 2_048
# Characters of an event's JSON one reply carries at most: even as \u escapes (6 bytes a
# character) a reply stays under NATS's default 1 MiB payload; so does a timeline page.
MAX_CHUNK: Final = 131_072
MAX_TIMELINE_PAGE: Final = 50
# Characters of an event's readable text one reply carries at most (``text``).
MAX_TEXT_PART: Final = 65_536
MAX_QUERY: Final = 2_000

Id = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Surface = Literal["user", "assistant", "tool", "system"]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Scoped(Args):
    # The workspace looked at; None only for sessions that recorded no cwd.
    workspace: str | None = Field(max_length=4096)


class SessionsArgs(_Scoped):
    sort: Literal["updated", "created", "events", "title"] = "updated"
    descending: bool = True
    offset: int = Field(default=0, ge=0, le=10_000_000)
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    availability: list[Literal["live", "persisted"]] | None = None
    created_from_ms: int | None = None
    created_to_ms: int | None = None
    updated_from_ms: int | None = None
    updated_to_ms: int | None = None
    parent_session_ids: list[Id] | None = Field(default=None, max_length=100)
    roots_only: bool = False
    title_contains: str | None = Field(default=None, max_length=200)


class SearchArgs(_Scoped):
    query: str = Field(min_length=1, max_length=MAX_QUERY)
    session_id: Id | None = None  # search inside this session (session_event_search)
    cursor: str | None = Field(default=None, max_length=4096)
    limit: int = Field(default=20, ge=1, le=MAX_PAGE)
    types: list[str] | None = Field(default=None, max_length=50)
    surfaces: list[Surface] | None = None
    availability: list[Literal["live", "persisted"]] | None = None
    time_from_ms: int | None = None
    time_to_ms: int | None = None


class TimelineArgs(_Scoped):
    session_id: Id
    from_seq: int = Field(default=1, ge=1)
    limit: int = Field(default=50, ge=1, le=MAX_TIMELINE_PAGE)


class EventArgs(_Scoped):
    session_id: Id
    seq: int = Field(ge=1)
    offset: int = Field(default=0, ge=0)
    size: int = Field(default=65_536, ge=1, le=MAX_CHUNK)


class LineageArgs(_Scoped):
    session_id: Id


class DeadLettersArgs(Args):
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)


class TextArgs(_Scoped):
    session_id: Id
    seq: int = Field(ge=1)
    query: str | None = Field(default=None, max_length=MAX_QUERY)
    # The part holding this offset (code points); None: the part holding the hit's match.
    offset: int | None = Field(default=None, ge=0)
    size: int = Field(default=16_384, ge=1, le=MAX_TEXT_PART)
