"""Provider API keys encrypted at rest: AES-256-GCM, with the 256-bit key in an owner-only
(0600) file in the data directory, never in the database."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from engram.errors import MissingDependency, StorageError

KEY_FILE = "provider-keys.key"
_NONCE = 12

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def _aesgcm(key: bytes) -> AESGCM:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:  # pragma: no cover - the llm extra is missing
        raise MissingDependency.extra("encrypting provider keys (cryptography)", "llm") from exc
    return AESGCM(key)


class KeyBox:
    """Encrypts and decrypts short secrets. The key file is created on first use with mode
    0600; a key file readable by others is refused."""

    def __init__(self, key_file: Path) -> None:
        self.key_file = Path(key_file)

    def __repr__(self) -> str:
        return f"KeyBox({str(self.key_file)!r})"

    def _key(self) -> bytes:
        path = self.key_file
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # created concurrently: read theirs
            else:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(os.urandom(32))
                    fh.flush()
                    os.fsync(fh.fileno())
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise StorageError(
                f"{path} is readable by other users (mode {mode:o}); run: chmod 600 {path}"
            )
        key = path.read_bytes()
        if len(key) != 32:
            raise StorageError(f"{path} is not a 256-bit key ({len(key)} bytes)")
        return key

    def encrypt(self, plaintext: str, context: str) -> bytes:
        """Nonce + ciphertext; ``context`` (e.g. the provider's name) is authenticated too, so a
        ciphertext copied to another row does not decrypt."""
        nonce = os.urandom(_NONCE)
        aes = _aesgcm(self._key())
        return nonce + aes.encrypt(nonce, plaintext.encode(), context.encode())

    def decrypt(self, blob: bytes, context: str) -> str:
        from cryptography.exceptions import InvalidTag

        aes = _aesgcm(self._key())
        try:
            plain = aes.decrypt(blob[:_NONCE], blob[_NONCE:], context.encode())
        except InvalidTag as exc:
            raise StorageError(
                "a stored provider key does not decrypt: the key file changed or the row was "
                "tampered with"
            ) from exc
        return plain.decode()
