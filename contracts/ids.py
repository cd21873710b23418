"""Identifier rules: ids become NATS subject tokens, so they are restricted."""

from typing import Annotated

from pydantic import StringConstraints

ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN, strict=True)]
