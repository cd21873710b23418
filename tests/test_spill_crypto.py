"""contracts.spill_crypto: the streamed opener against the one-shot seal, piece by piece."""

from __future__ import annotations

import hashlib
import os

import pytest

from contracts.spill_crypto import (
    NOT_AUTHENTIC,
    TAG_BYTES,
    SealedOpener,
    SpillDecryptError,
    open_sealed,
    seal,
)


def _pieces(data: bytes, sizes: list[int]) -> list[bytes]:
    out, at = [], 0
    for size in sizes:
        out.append(data[at : at + size])
        at += size
    out.append(data[at:])
    return [piece for piece in out if piece]


@pytest.mark.parametrize(
    "cut",
    [
        "whole",  # one piece: ciphertext and tag
        "tag apart",  # the tag in a piece of its own
        "tag straddles",  # a piece boundary inside the tag
        "odd pieces",  # pieces that are not multiples of the AES block
    ],
)
def test_streamed_opening_equals_the_one_shot(cut: str) -> None:
    data = os.urandom(100_003)
    sealed, encryption = seal(data)
    size = len(data)
    sizes = {
        "whole": [],
        "tag apart": [size],
        "tag straddles": [size + 5],
        "odd pieces": [1, 15, 17, 65_537, 3],
    }[cut]
    opener = SealedOpener(encryption, size)
    for piece in _pieces(sealed, sizes):
        opener.feed(piece)
    plaintext, digest = opener.finish()
    assert plaintext == data == open_sealed(sealed, encryption)
    assert digest == hashlib.sha256(data).digest()


def test_an_empty_result_is_its_tag_alone() -> None:
    sealed, encryption = seal(b"")
    assert len(sealed) == TAG_BYTES
    opener = SealedOpener(encryption, 0)
    opener.feed(sealed[:7])
    opener.feed(sealed[7:])
    assert opener.finish() == (bytearray(), hashlib.sha256(b"").digest())


@pytest.mark.parametrize("at", [0, 4_999, 10_000 + 3])  # ciphertext start, end; the tag
def test_a_changed_byte_does_not_authenticate(at: int) -> None:
    data = os.urandom(10_000)
    sealed, encryption = seal(data)
    changed = bytearray(sealed)
    changed[at] ^= 0x80
    opener = SealedOpener(encryption, len(data))
    opener.feed(changed[:5_000])
    opener.feed(changed[5_000:])
    with pytest.raises(SpillDecryptError, match=NOT_AUTHENTIC):
        opener.finish()


def test_short_and_long_objects_are_refused() -> None:
    data = os.urandom(1_000)
    sealed, encryption = seal(data)
    short = SealedOpener(encryption, len(data))
    short.feed(sealed[:-1])
    with pytest.raises(SpillDecryptError, match="shorter"):
        short.finish()
    long = SealedOpener(encryption, len(data))
    long.feed(sealed)
    with pytest.raises(SpillDecryptError, match="larger"):
        long.feed(b"x")


def test_a_malformed_key_is_refused_before_anything_is_read() -> None:
    _, encryption = seal(b"x")
    with pytest.raises(SpillDecryptError, match="wrong length"):
        SealedOpener(encryption.model_copy(update={"key": "AAAA"}), 1)
    with pytest.raises(SpillDecryptError, match="wrong length"):
        SealedOpener(encryption.model_copy(update={"nonce": encryption.key}), 1)
