"""Lease records as files under ``lease_dir`` (spec 03 §6.4), safe across processes.

Layout: ``<lease_dir>/<encoded scope>/<encoded key>.json`` holding ``{"nonce":…,"ts":…}``.

Every process sharing a ``lease_dir`` sees the same claims: nothing is cached, a record is
replaced by writing a temporary file and renaming it over the old one (readers never see half a
record), and every write runs under an exclusive ``flock`` on the scope's lock file, so a
``swap`` is atomic across processes and an expired claim is taken over by exactly one of them.
``claim`` also checks before it writes, in the same locked step, so a loser never writes.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from context_manager.ports import LeaseRecord, LeaseStoreError
from context_manager.wire.errors import Error

_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
LOCK_FILE_NAME = ".lock"  # never a record: record names always end in ".json"


class LeaseDirError(Error):
    """The lease directory could not be created (fatal at boot, 04 §1.5)."""


def encode_component(text: str) -> str:
    """Path-safe name: ``A-Z a-z 0-9 . _ -`` kept, every other UTF-8 byte as ``%XX``."""
    return "".join(
        chr(byte) if byte in _PLAIN else f"%{byte:02X}"
        for byte in text.encode("utf-8", "surrogatepass")
    )


def os_error_text(exc: OSError) -> str:
    """An OS error worded like the original's (``Permission denied (os error 13)``)."""
    if exc.errno is not None and exc.strerror:
        return f"{exc.strerror} (os error {exc.errno})"
    return str(exc)


def parse_record(text: str) -> LeaseRecord | None:
    """A ``{nonce: string, ts: i64}`` object (extra members allowed); anything else is free."""
    try:
        return LeaseRecord.from_value(orjson.loads(text))
    except orjson.JSONDecodeError:
        return None


def record_bytes(record: LeaseRecord) -> bytes:
    return orjson.dumps(record.as_value())


class FsLeaseStore:
    """The file-backed lease store: a :class:`~context_manager.ports.ClaimingLeaseStore`.

    ``create=True`` creates ``directory`` now (the worker's boot behaviour: a directory that
    cannot be created raises :class:`LeaseDirError`); ``create=False`` defers every directory
    until a lease is actually written, for one-shot command-line calls.
    """

    def __init__(self, directory: str | os.PathLike[str], *, create: bool = True) -> None:
        self.directory = Path(directory)
        if create:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LeaseDirError(
                    f"create lease_dir {self.directory}: {os_error_text(exc)}"
                ) from exc

    # --- paths ---------------------------------------------------------------------------

    def scope_dir(self, scope: str) -> Path:
        return self.directory / encode_component(scope)

    def record_path(self, scope: str, key: str) -> Path:
        return self.scope_dir(scope) / f"{encode_component(key)}.json"

    def temp_path(self, scope: str, key: str) -> Path:
        path = self.record_path(scope, key)
        # The empty key's file is the dot-file ".json"; its temp name is ".json.json.tmp".
        suffix = ".json.tmp" if path.name == ".json" else ".tmp"
        return path.with_name(path.name + suffix)

    # --- port ----------------------------------------------------------------------------

    async def get(self, scope: str, key: str) -> LeaseRecord | None:
        # Records are only ever replaced by rename, so an unlocked read sees a whole record.
        return self._read(scope, key)

    async def set(self, scope: str, key: str, record: LeaseRecord | None) -> None:
        with self._locked(scope):
            if record is None:
                self._delete(scope, key)
            else:
                self._write(scope, key, record)

    async def swap(self, scope: str, key: str, record: LeaseRecord) -> LeaseRecord | None:
        with self._locked(scope):
            prior = self._read(scope, key)
            self._write(scope, key, record)
            return prior

    async def claim(self, scope: str, key: str, record: LeaseRecord,
                    held: Callable[[LeaseRecord | None], bool]) -> LeaseRecord | None:
        """Write ``record`` unless the stored one is still ``held``; the stored one either way."""
        with self._locked(scope):
            prior = self._read(scope, key)
            if not held(prior):
                self._write(scope, key, record)
            return prior

    # --- file operations -----------------------------------------------------------------

    def _read(self, scope: str, key: str) -> LeaseRecord | None:
        path = self.record_path(scope, key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise LeaseStoreError(f"read {path}: {os_error_text(exc)}") from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LeaseStoreError(f"read {path}: stream did not contain valid UTF-8") from exc
        return parse_record(text)

    def _write(self, scope: str, key: str, record: LeaseRecord) -> None:
        path = self.record_path(scope, key)
        temp = self.temp_path(scope, key)
        try:
            temp.write_bytes(record_bytes(record))
            os.replace(temp, path)
        except OSError as exc:
            raise LeaseStoreError(f"write {path}: {os_error_text(exc)}") from exc

    def _delete(self, scope: str, key: str) -> None:
        path = self.record_path(scope, key)
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise LeaseStoreError(f"delete {path}: {os_error_text(exc)}") from exc

    @contextmanager
    def _locked(self, scope: str) -> Iterator[None]:
        """Exclusive across processes and threads: ``flock`` binds the open file, not the process."""
        directory = self.scope_dir(scope)
        lock_path = directory / LOCK_FILE_NAME
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LeaseStoreError(f"lock {lock_path}: {os_error_text(exc)}") from exc
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # interrupted waits are retried by Python itself
            except OSError as exc:
                raise LeaseStoreError(f"lock {lock_path}: {os_error_text(exc)}") from exc
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock
