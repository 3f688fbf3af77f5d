"""Sets of 16-byte digests held compactly, for what a run must remember of every file or finding it met (the files
discovery has yielded, the findings reported once): memory stays small in the number of files."""
from __future__ import annotations


def digest(text: str) -> bytes:
    """16 bytes that stand for ``text`` (a collision is as likely as 2^-128)."""
    from _blake2 import blake2b  # the C module directly, as rlhf_lint.cachedir: hashlib's import costs start-up

    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Digests:
    """A set of 16-byte digests (the runner's check that a finding is reported once) held in one bytearray with
    open addressing: about 35 bytes an entry, where a set of bytes objects takes about 90."""

    _EMPTY = bytes(16)

    def __init__(self) -> None:
        self._table = bytearray(16 * 1024)
        self._mask = 1023
        self._used = 0
        self._zero = False  # the all-zero digest, which marks an empty slot

    def _slot(self, digest: bytes) -> int:
        """The slot holding ``digest``, or the empty one where it would go."""
        table, mask = self._table, self._mask
        i = int.from_bytes(digest[:8], "little") & mask
        while True:
            held = table[16 * i:16 * i + 16]
            if held == digest or held == self._EMPTY:
                return i
            i = (i + 1) & mask

    def __contains__(self, digest: bytes) -> bool:
        if digest == self._EMPTY:
            return self._zero
        i = self._slot(digest)
        return self._table[16 * i:16 * i + 16] == digest

    def add(self, digest: bytes) -> None:
        if len(digest) != 16:
            raise ValueError("digests are 16 bytes")
        if digest == self._EMPTY:
            self._zero = True
            return
        i = self._slot(digest)
        if self._table[16 * i:16 * i + 16] == digest:
            return
        self._table[16 * i:16 * i + 16] = digest
        self._used += 1
        if self._used * 3 > self._mask * 2:  # two thirds full: twice the slots
            old = self._table
            self._table = bytearray(len(old) * 2)
            self._mask = self._mask * 2 + 1
            self._used = 0
            for at in range(0, len(old), 16):
                held = bytes(old[at:at + 16])
                if held != self._EMPTY:
                    self.add(held)

    def __len__(self) -> int:
        return self._used + self._zero
