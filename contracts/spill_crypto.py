"""Sealing spilled results: the locator is a capability.

Each spilled object is encrypted with AES-256-GCM under a fresh random 256-bit key and a
random 96-bit nonce; the key exists only in the reply's locator, so listing or reading the
bucket yields nothing readable. The stored object is the ciphertext followed by the
16-byte GCM tag (the layout WebCrypto's ``decrypt`` takes as is); there is no additional
authenticated data. Key and nonce travel as unpadded base64url. The locator's digest is
the SHA-256 of the plaintext. docs/spill.md states this for clients in any language.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from contracts.envelope import SpillEncryption
from contracts.errors import SessionQueryClientError

ALGORITHM: Final = "A256GCM"
KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
TAG_BYTES: Final = 16
DIGEST_PREFIX: Final = "SHA-256="
NOT_AUTHENTIC: Final = "the object does not authenticate under the locator's key"


class SpillDecryptError(SessionQueryClientError, ValueError):
    """The object does not decrypt under the locator's key: corrupt, replaced or foreign."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def plaintext_digest(data: bytes | bytearray | memoryview) -> str:
    """``SHA-256=<base64url>``, the object store's digest format, of the plaintext."""
    return DIGEST_PREFIX + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


def seal(data: bytes) -> tuple[bytes, SpillEncryption]:
    """``data`` encrypted under a fresh key and nonce: (ciphertext || tag, the parameters)."""
    key = AESGCM.generate_key(bit_length=KEY_BYTES * 8)
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, data, None)
    return sealed, SpillEncryption(alg=ALGORITHM, key=b64url(key), nonce=b64url(nonce))


def _key_and_nonce(encryption: SpillEncryption) -> tuple[bytes, bytes]:
    try:
        key, nonce = from_b64url(encryption.key), from_b64url(encryption.nonce)
    except ValueError:
        raise SpillDecryptError("the locator's key or nonce is not base64url") from None
    if len(key) != KEY_BYTES or len(nonce) != NONCE_BYTES:
        raise SpillDecryptError("the locator's key or nonce has the wrong length")
    return key, nonce


def open_sealed(sealed: bytes | bytearray, encryption: SpillEncryption) -> bytes:
    """The plaintext of ``sealed`` (ciphertext || tag); raises ``SpillDecryptError``."""
    key, nonce = _key_and_nonce(encryption)
    try:
        # A bytes-like object is taken as it is: no copy of a large result.
        return AESGCM(key).decrypt(nonce, sealed, None)
    except InvalidTag:
        raise SpillDecryptError(NOT_AUTHENTIC) from None


class SealedOpener:
    """Opens a sealed object as its bytes arrive, in order: each piece is decrypted into
    one buffer of the plaintext's size (allocated once) and hashed there. Nothing it holds
    is plaintext to trust until ``finish`` has checked the tag."""

    def __init__(self, encryption: SpillEncryption, size: int) -> None:
        key, nonce = _key_and_nonce(encryption)
        self._decryptor = Cipher(algorithms.AES(key), modes.GCM(nonce)).decryptor()
        self._size = size
        self._plaintext = bytearray(size)
        self._tag = bytearray(TAG_BYTES)
        self._digest = hashlib.sha256()
        self._offset = 0

    def feed(self, piece: bytes | bytearray | memoryview) -> None:
        """The next bytes of the stored object (ciphertext, then the tag)."""
        data = memoryview(piece)
        start, end = self._offset, self._offset + len(data)
        if end > self._size + TAG_BYTES:
            raise SpillDecryptError("the object is larger than its plaintext and tag")
        text_end = min(end, self._size)
        if text_end > start:
            with memoryview(self._plaintext) as view:
                out = view[start:text_end]
                self._decryptor.update_into(data[: text_end - start], out)
                self._digest.update(out)
                out.release()
        if end > self._size:
            tag_from = max(start, self._size)
            self._tag[tag_from - self._size : end - self._size] = data[tag_from - start :]
        self._offset = end

    def finish(self) -> tuple[bytearray, bytes]:
        """The plaintext and its SHA-256, once the whole object is in and its tag
        authenticates; raises ``SpillDecryptError`` otherwise."""
        if self._offset != self._size + TAG_BYTES:
            raise SpillDecryptError("the object is shorter than its plaintext and tag")
        try:
            self._decryptor.finalize_with_tag(bytes(self._tag))
        except InvalidTag:
            raise SpillDecryptError(NOT_AUTHENTIC) from None
        return self._plaintext, self._digest.digest()
