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
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from contracts.envelope import SpillEncryption
from contracts.errors import SessionQueryClientError

ALGORITHM: Final = "A256GCM"
KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
TAG_BYTES: Final = 16
DIGEST_PREFIX: Final = "SHA-256="


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


def open_sealed(sealed: bytes | bytearray, encryption: SpillEncryption) -> bytes:
    """The plaintext of ``sealed`` (ciphertext || tag); raises ``SpillDecryptError``."""
    try:
        key, nonce = from_b64url(encryption.key), from_b64url(encryption.nonce)
    except ValueError:
        raise SpillDecryptError("the locator's key or nonce is not base64url") from None
    if len(key) != KEY_BYTES or len(nonce) != NONCE_BYTES:
        raise SpillDecryptError("the locator's key or nonce has the wrong length")
    try:
        # A bytes-like object is taken as it is: no copy of a large result.
        return AESGCM(key).decrypt(nonce, sealed, None)
    except InvalidTag:
        raise SpillDecryptError(
            "the object does not authenticate under the locator's key"
        ) from None
