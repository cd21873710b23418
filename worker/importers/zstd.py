"""zstd, which some agents compress their stores with (Zed's threads, OpenClaw's large
transcript rows): Python 3.14's ``compression.zstd`` or the ``zstandard`` package (the
worker's ``zstd`` extra: ``pip install 'session-query-worker[zstd]'``); Python 3.11 to
3.13 have none of their own. Imported by name: an optional, untyped dependency."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Final

INSTALL_HINT: Final = "pip install 'session-query-worker[zstd]'"


def decompressor() -> Callable[[bytes], bytes] | None:
    """A zstd decompressor, or None when this Python has none. It reads frames that do
    not record their size (streaming encoders write those) and raises on a damaged one."""
    try:
        stdlib = importlib.import_module("compression.zstd")
    except ImportError:
        pass
    else:
        decompress: Callable[[bytes], bytes] = stdlib.decompress
        return decompress
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        return None

    def streamed(data: bytes) -> bytes:
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            return bytes(reader.read())

    return streamed
