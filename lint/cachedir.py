"""The user's cache folder, shared by the results cache (rlhf_lint.engine.cache) and the parsed knowledge files
(rlhf_lint.schemas): where it is, whether it can be trusted, and how entries are sealed, written and read back.

A linter runs on pull requests from strangers, in shared CI caches and pre-commit environments, so nothing read from
the folder is trusted for being there:
- the folder must be a real folder of this user that no one else can write (created 0700); otherwise it is not
  used at all, with a warning;
- every entry is sealed with a keyed BLAKE2b MAC (a per-user random key in the folder, created 0600): an entry
  planted or edited by anyone without the key is ignored, so a restored or shared cache cannot hide a finding or
  make the reader allocate without bound;
- entries are written to an unpredictable temporary name created exclusively (O_EXCL) and renamed into place, and
  read without following symlinks, size-checked before reading;
- ``set_enabled(False)`` (``--no-cache``) makes every read and write a no-op.
A cache that cannot be used is no cache, never an error.
"""
from __future__ import annotations

import os

KEY_NAME = "key"
KEY_BYTES = 32
MAC_BYTES = 32

# keys: folder -> its MAC key, or None when it is not used; refused: folder -> why
_STATE: dict = {"disabled": False, "keys": {}, "refused": {}}


def cache_dir() -> str:
    explicit = os.environ.get("RLHF_LINT_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rlhf-lint")


def set_enabled(enabled: bool) -> bool:
    """False: nothing is read from or written to the cache folder by this process until enabled again
    (``--no-cache``). Returns the previous setting, for the caller to restore."""
    previous = not _STATE["disabled"]
    _STATE["disabled"] = not enabled
    return previous


def _refuse(folder: str, why: str) -> None:
    _STATE["refused"][folder] = f"warning: the cache folder {folder} {why}; running without the cache"


def refusal() -> str | None:
    """Why the current cache folder is not used, when it was tried and refused."""
    return _STATE["refused"].get(cache_dir())


def _private_folder(folder: str) -> bool:
    """True when ``folder`` is (now) a folder of this user that nobody else can write."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError as exc:
        _refuse(folder, f"cannot be created ({exc.strerror or exc})")
        return False
    import stat

    if not stat.S_ISDIR(st.st_mode):
        _refuse(folder, "is not a folder (a symlink or a file)")
    elif hasattr(os, "getuid") and st.st_uid != os.getuid():
        _refuse(folder, f"belongs to another user (uid {st.st_uid})")
    elif st.st_mode & 0o022:
        _refuse(folder, "can be written by other users")
    else:
        return True
    return False


def _key() -> bytes | None:
    """This user's MAC key for entries of the cache folder, created on first use; None when the folder is not used."""
    if _STATE["disabled"]:
        return None
    folder = cache_dir()
    keys = _STATE["keys"]
    if folder not in keys:
        keys[folder] = _load_key(folder)
    return keys[folder]


def _load_key(folder: str) -> bytes | None:
    if not _private_folder(folder):
        return None
    path = os.path.join(folder, KEY_NAME)
    key = _read_private(path, KEY_BYTES)
    if key is None and not os.path.lexists(path):
        import tempfile

        # a complete key file appears at once (link of a finished temporary file), so a concurrent run never
        # reads half a key; if another run won the race, its key is the one
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".key-")
            try:
                os.write(fd, os.urandom(KEY_BYTES))
                os.close(fd)
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    pass
            finally:
                os.unlink(tmp)
        except OSError:
            pass
        key = _read_private(path, KEY_BYTES)
    if key is None or len(key) != KEY_BYTES:
        _refuse(folder, f"holds a key file ({path}) that is not a private {KEY_BYTES}-byte file of this user")
        return None
    return key


def usable() -> bool:
    """Whether this process reads and writes the cache folder (it is enabled, private and holds a valid key)."""
    return _key() is not None


def _read_private(path: str, limit: int) -> bytes | None:
    """The bytes of a regular file of this user, not readable or writable by others, of at most ``limit`` bytes;
    None otherwise. Never follows a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        import stat

        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_size > limit or st.st_mode & 0o077
                or (hasattr(os, "getuid") and st.st_uid != os.getuid())):
            return None
        return os.read(fd, limit + 1)[:limit + 1]
    except OSError:
        return None
    finally:
        os.close(fd)


def _mac(key: bytes, data, label: str) -> bytes:
    try:
        from _blake2 import blake2b  # the C module itself: hashlib's import costs ~5 ms of a one-file run
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import blake2b
    h = blake2b(key=key, digest_size=MAC_BYTES)
    # the label (the entry's place in the folder) binds an entry to its name: a valid entry copied over another
    # name is refused
    h.update(label.encode("utf-8", "surrogateescape") + b"\0")
    h.update(data)
    return h.digest()


def _equal(a: bytes, b: bytes) -> bool:
    try:
        from _operator import _compare_digest
    except ImportError:  # pragma: no cover
        from hmac import compare_digest as _compare_digest
    return _compare_digest(a, b)


def read_entry(path: str, limit: int) -> bytes | None:
    """The payload of a sealed entry written by write_entry, or None (no cache, missing, too big, not ours,
    tampered)."""
    key = _key()
    if key is None:
        return None
    blob = _read_private(path, limit + MAC_BYTES)
    if blob is None or len(blob) < MAC_BYTES:
        return None
    payload = memoryview(blob)[MAC_BYTES:]
    if not _equal(blob[:MAC_BYTES], _mac(key, payload, os.path.relpath(path, cache_dir()))):
        return None
    return bytes(payload)


def write_entry(path: str, data: bytes) -> None:
    """Seal and write an entry atomically: an exclusively created temporary file of an unpredictable name beside it
    (mode 0600), then a rename. Best effort: a cache that cannot be written is no cache, never an error."""
    key = _key()
    if key is None:
        return
    import tempfile

    tmp = None
    try:
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".entry-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(_mac(key, data, os.path.relpath(path, cache_dir())))
            fh.write(data)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
