"""One broker per data dir: two processes writing one database would overwrite each other's
messages. An advisory lock on a file beside the database; the OS drops it if the process dies,
so a kill -9 never leaves a stale lock behind."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from rabbitish.store.schema import StoreError

LOCK_NAME = "rabbitish.lock"


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise self._in_use() from None
        self._fd = fd

    def probe(self) -> None:
        """Refuse, as `acquire` would, a data dir a running broker holds; take nothing and
        create nothing (a data dir that has no lock file has no broker either)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise self._in_use() from None
        finally:
            os.close(fd)

    def _in_use(self) -> StoreError:
        return StoreError(
            f"{self.path.parent}: in use by another running rabbitish (locked through "
            f"{self.path}); stop it or pass another --data-dir"
        )

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
