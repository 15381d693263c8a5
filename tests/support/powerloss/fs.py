"""The power-loss file system as a FUSE process (mfusepy over libfuse3): the tree of model.py
mounted at MOUNT over BACKING, single-threaded.

    python -m tests.support.powerloss.fs BACKING MOUNT

It reads commands on stdin, one a line, and answers each on stdout:

    cut PID MODE SEED   with every file system call held: SIGKILL PID (0: nobody), leave the
                        backing dir as MODE (drop / torn) says, refuse every later call with EIO;
                        answers "cut <what was lost>". Unmount (fusermount3 -u) afterwards.

A clean unmount without a cut leaves the backing dir as a cut in `drop` mode would: what was
never synced never reached it."""

from __future__ import annotations

import errno
import os
import random
import signal
import stat
import sys
import threading
from typing import Any

import mfusepy

from tests.support.powerloss.model import DirNode, FileNode, PowerLossTree, fs_error


class PowerLossOperations(mfusepy.Operations):
    use_ns = True

    def __init__(self, backing: str) -> None:
        self.tree = PowerLossTree(backing)
        self.backing = backing
        self.mutex = threading.Lock()
        self.dead = False
        self.handles: dict[int, FileNode] = {}
        self.next_handle = 1
        self.uid, self.gid = os.getuid(), os.getgid()

    def _alive(self) -> None:
        if self.dead:
            raise fs_error(errno.EIO)

    def _node(self, path: str | None, fh: int | None) -> FileNode:
        if fh is not None and fh in self.handles:
            return self.handles[fh]
        if path is None:
            raise fs_error(errno.EBADF)
        return self.tree.file(path)

    def _handle(self, node: FileNode) -> int:
        fh = self.next_handle
        self.next_handle += 1
        self.handles[fh] = node
        return fh

    # ------------------------------------------------------------------ the cut
    def cut(self, pid: int, mode: str, seed: int) -> str:
        with self.mutex:
            if pid > 0:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            report = self.tree.cut(mode, random.Random(seed))
            self.dead = True
        return report.line()

    # ------------------------------------------------------------------ metadata
    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        with self.mutex:
            self._alive()
            node = self.handles.get(fh) if fh is not None else None
            if node is None:
                if path is None:
                    raise fs_error(errno.EBADF)
                node = self.tree.lookup(path)
            size = len(node.data) if isinstance(node, FileNode) else 0
            return {
                "st_mode": node.mode,
                "st_nlink": 2 if isinstance(node, DirNode) else 1,
                "st_size": size,
                "st_blocks": (size + 511) // 512,
                "st_uid": self.uid,
                "st_gid": self.gid,
                "st_mtime": node.mtime,
                "st_ctime": node.mtime,
                "st_atime": node.mtime,
            }

    def access(self, path: str, amode: int) -> int:
        with self.mutex:
            self._alive()
            self.tree.lookup(path)
            return 0

    def statfs(self, path: str) -> dict[str, int]:
        info = os.statvfs(self.backing)
        return {
            key: getattr(info, key)
            for key in (
                "f_bsize",
                "f_frsize",
                "f_blocks",
                "f_bfree",
                "f_bavail",
                "f_files",
                "f_ffree",
                "f_favail",
                "f_namemax",
            )
        }

    def chmod(self, path: str, mode: int) -> int:
        with self.mutex:
            self._alive()
            node = self.tree.lookup(path)
            node.mode = stat.S_IFMT(node.mode) | (mode & 0o7777)
            return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        with self.mutex:
            self._alive()
            return 0

    # ------------------------------------------------------------------ names
    def readdir(self, path: str, fh: int) -> list[str]:
        with self.mutex:
            self._alive()
            return [".", "..", *self.tree.readdir(path)]

    def mkdir(self, path: str, mode: int) -> int:
        with self.mutex:
            self._alive()
            self.tree.mkdir(path, mode)
            return 0

    def rmdir(self, path: str) -> int:
        with self.mutex:
            self._alive()
            self.tree.rmdir(path)
            return 0

    def unlink(self, path: str) -> int:
        with self.mutex:
            self._alive()
            self.tree.unlink(path)
            return 0

    def rename(self, old: str, new: str) -> int:
        with self.mutex:
            self._alive()
            self.tree.rename(old, new)
            return 0

    # ------------------------------------------------------------------ files
    def create(self, path: str, mode: int, flags: int = 0) -> int:
        with self.mutex:
            self._alive()
            return self._handle(self.tree.create(path, mode))

    def open(self, path: str, flags: int) -> int:
        with self.mutex:
            self._alive()
            node = self.tree.file(path)
            if flags & os.O_TRUNC:
                self.tree.truncate(node, 0)
            return self._handle(node)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        with self.mutex:
            self._alive()
            return self.tree.read(self._node(path, fh), size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        with self.mutex:
            self._alive()
            return self.tree.write(self._node(path, fh), bytes(data), offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        with self.mutex:
            self._alive()
            self.tree.truncate(self._node(path, fh), length)
            return 0

    def flush(self, path: str, fh: int) -> int:
        return 0

    def release(self, path: str, fh: int) -> int:
        with self.mutex:
            self.handles.pop(fh, None)
            return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        with self.mutex:
            self._alive()
            self.tree.fsync(self._node(path, fh))
            return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        with self.mutex:
            self._alive()
            self.tree.fsyncdir(self.tree.directory(path))
            return 0


class _FUSE(mfusepy.FUSE):
    """mfusepy drops the file handle of an ftruncate under libfuse3; keep it, so a file
    truncated through a descriptor is found even after it was unlinked."""

    def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
        if fip:
            return self.ftruncate(path, length, fip)
        return super().truncate_fuse_3(path, length, fip)


def _commands(operations: PowerLossOperations) -> None:
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["cut"]:
            answer = operations.cut(int(words[1]), words[2], int(words[3]))
            print(f"cut {answer}", flush=True)


def main(backing: str, mount: str) -> None:
    operations = PowerLossOperations(backing)
    threading.Thread(target=_commands, args=(operations,), daemon=True).start()
    _FUSE(
        operations,
        mount,
        foreground=True,
        nothreads=True,
        fsname="rabbitish-powerloss",
        hard_remove=True,
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
