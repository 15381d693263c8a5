"""The file system the power-loss tests run the broker on, without FUSE: what the broker sees
(the live tree, in memory) and what a power cut leaves (the durable tree, the backing dir on
disk), and the rules that move one into the other.

A file's data reaches the backing dir only when the file is fsynced. Name changes (create,
mkdir, unlink, rmdir, rename) wait in an ordered log until an fsync makes them durable: an fsync
of a file commits the entries naming that file (its creation, its renames), an fsync of a
directory the entries that changed what it holds, each with the earlier entries it depends on
(those naming the same node, the same path or a path above or below it, such as the creation of
its directory), in log order. Nothing else is committed: a file created and written but never
synced, itself or through its directory, is gone after a cut. A directory's own name is held by
its parent, so as POSIX says only an fsync of the parent makes a new directory durable: one
whose creation was committed only because something under it was synced is gone after a cut,
with everything under it. Whatever a cut finds unsynced is lost:

- `drop`: every unsynced write, truncate and name change is thrown away (the backing dir is the
  disk as it was at the last sync);
- `torn`: the disk wrote everything but the last unsynced write of each file, and that one only
  in part: every name change is kept, every unsynced write but the last is kept, and the last
  keeps a random prefix (possibly empty) of its bytes.

Both are states a real disk without data journaling can be left in. Not modelled: atime, hard
links, symlinks, extended attributes (the broker uses none of them)."""

from __future__ import annotations

import errno
import os
import random
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MODES = ("drop", "torn")


def fs_error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class Node:
    """A file or directory of the live tree. `durable` is its path in the backing dir, or None
    while its creation is not durable (or after its removal is)."""

    def __init__(self, mode: int, durable: str | None) -> None:
        self.mode = mode
        self.durable = durable
        self.mtime = time.time_ns()

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)


class DirNode(Node):
    def __init__(self, mode: int, durable: str | None) -> None:
        super().__init__(mode, durable)
        self.entries: dict[str, Node] = {}


class FileNode(Node):
    def __init__(self, mode: int, durable: str | None, data: bytes = b"") -> None:
        super().__init__(mode, durable)
        self.data = bytearray(data)
        self.dirty: list[tuple[int, int]] = []  # [start, end) written since the last sync
        self.low_size: int | None = None  # smallest size a truncate gave it since then
        # The last unsynced write: (offset, length, the bytes it replaced, the size before it).
        self.last_write: tuple[int, int, bytes, int] | None = None

    @property
    def unsynced(self) -> bool:
        return bool(self.dirty) or self.low_size is not None


@dataclass
class NameOp:
    kind: str  # create, mkdir, unlink, rmdir, rename
    node: Node
    path: str
    new_path: str | None = None  # rename's target
    replaced: Node | None = None  # what a rename replaced
    dirs: tuple[DirNode, ...] = ()  # the directories whose entries it changes
    done: bool = False  # in the backing dir

    def paths(self) -> tuple[str, ...]:
        return (self.path,) if self.new_path is None else (self.path, self.new_path)

    def nodes(self) -> tuple[Node, ...]:
        return (self.node,) if self.replaced is None else (self.node, self.replaced)

    def depends_on(self, earlier: NameOp) -> bool:
        """Whether `earlier` must be durable before this entry can be."""
        if any(node is other for node in self.nodes() for other in earlier.nodes()):
            return True
        return any(_related(p, q) for p in self.paths() for q in earlier.paths())


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


@dataclass
class CutReport:
    """What a cut threw away: unsynced writes and name changes lost, writes torn."""

    mode: str
    lost_writes: int = 0
    lost_bytes: int = 0
    lost_names: int = 0
    torn: list[str] = field(default_factory=list)  # "path: kept k of n bytes"
    lost_dirs: list[str] = field(default_factory=list)  # made, parent never synced
    by_file: dict[str, int] = field(default_factory=dict)  # path -> writes lost

    def line(self) -> str:
        torn = "; ".join(self.torn) if self.torn else "none"
        files = ", ".join(f"{path} {n}" for path, n in sorted(self.by_file.items()))
        dirs = f"; directories lost: {', '.join(self.lost_dirs)}" if self.lost_dirs else ""
        return (
            f"{self.mode}: lost {self.lost_writes} writes ({self.lost_bytes} bytes"
            f"{': ' + files if files else ''}) and {self.lost_names} name changes{dirs}; "
            f"torn: {torn}"
        )


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def name_of(path: str) -> str:
    return path.rsplit("/", 1)[1]


class PowerLossTree:
    """The live tree over a backing dir; paths are absolute within the mount ("/", "/a/b")."""

    def __init__(self, backing: str | Path) -> None:
        self.backing = Path(backing)
        self.root = DirNode(stat.S_IFDIR | 0o755, "/")
        self.log: list[NameOp] = []  # name changes not yet durable, in order
        # Directories made on the disk whose own name is not durable yet (their parent was
        # not synced since): a cut removes them with all they hold.
        self.unnamed: list[DirNode] = []
        self._load(self.root, "/")

    # ------------------------------------------------------------------ loading
    def _real(self, path: str) -> Path:
        return self.backing / path.lstrip("/")

    def _load(self, directory: DirNode, path: str) -> None:
        for entry in sorted(os.scandir(self._real(path)), key=lambda e: e.name):
            child = f"{path.rstrip('/')}/{entry.name}"
            info = entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                node = DirNode(info.st_mode, child)
                directory.entries[entry.name] = node
                self._load(node, child)
            elif entry.is_file(follow_symlinks=False):
                directory.entries[entry.name] = FileNode(
                    info.st_mode, child, Path(entry.path).read_bytes()
                )

    # ------------------------------------------------------------------ lookups
    def lookup(self, path: str) -> Node:
        node: Node = self.root
        for part in path.strip("/").split("/"):
            if not part:
                continue
            if not isinstance(node, DirNode):
                raise fs_error(errno.ENOTDIR)
            found = node.entries.get(part)
            if found is None:
                raise fs_error(errno.ENOENT)
            node = found
        return node

    def directory(self, path: str) -> DirNode:
        node = self.lookup(path)
        if not isinstance(node, DirNode):
            raise fs_error(errno.ENOTDIR)
        return node

    def file(self, path: str) -> FileNode:
        node = self.lookup(path)
        if isinstance(node, DirNode):
            raise fs_error(errno.EISDIR)
        assert isinstance(node, FileNode)
        return node

    # ------------------------------------------------------------------ names
    def _record(self, op: NameOp, *directories: DirNode) -> None:
        op.dirs = directories
        self.log.append(op)

    def create(self, path: str, mode: int) -> FileNode:
        parent = self.directory(parent_of(path))
        if name_of(path) in parent.entries:
            raise fs_error(errno.EEXIST)
        node = FileNode(stat.S_IFREG | (mode & 0o7777), None)
        parent.entries[name_of(path)] = node
        self._record(NameOp("create", node, path), parent)
        return node

    def mkdir(self, path: str, mode: int) -> None:
        parent = self.directory(parent_of(path))
        if name_of(path) in parent.entries:
            raise fs_error(errno.EEXIST)
        node = DirNode(stat.S_IFDIR | (mode & 0o7777), None)
        parent.entries[name_of(path)] = node
        self._record(NameOp("mkdir", node, path), parent)

    def unlink(self, path: str) -> None:
        parent = self.directory(parent_of(path))
        node = self.lookup(path)
        if isinstance(node, DirNode):
            raise fs_error(errno.EISDIR)
        del parent.entries[name_of(path)]
        self._record(NameOp("unlink", node, path), parent)

    def rmdir(self, path: str) -> None:
        parent = self.directory(parent_of(path))
        node = self.directory(path)
        if node.entries:
            raise fs_error(errno.ENOTEMPTY)
        del parent.entries[name_of(path)]
        self._record(NameOp("rmdir", node, path), parent)

    def rename(self, old: str, new: str) -> None:
        source = self.directory(parent_of(old))
        target = self.directory(parent_of(new))
        node = self.lookup(old)
        replaced = target.entries.get(name_of(new))
        if replaced is node:
            return
        if replaced is not None:
            if isinstance(replaced, DirNode) != isinstance(node, DirNode):
                raise fs_error(errno.EISDIR if isinstance(replaced, DirNode) else errno.ENOTDIR)
            if isinstance(replaced, DirNode) and replaced.entries:
                raise fs_error(errno.ENOTEMPTY)
        if isinstance(node, DirNode) and f"{new}/".startswith(f"{old}/"):
            raise fs_error(errno.EINVAL)
        del source.entries[name_of(old)]
        target.entries[name_of(new)] = node
        self._record(NameOp("rename", node, old, new, replaced), source, target)

    def readdir(self, path: str) -> list[str]:
        return list(self.directory(path).entries)

    # ------------------------------------------------------------------ data
    def read(self, node: FileNode, size: int, offset: int) -> bytes:
        return bytes(node.data[offset : offset + size])

    def write(self, node: FileNode, data: bytes, offset: int) -> int:
        old_size = len(node.data)
        end = offset + len(data)
        node.last_write = (offset, len(data), bytes(node.data[offset:end]), old_size)
        if offset > old_size:
            node.data.extend(bytes(offset - old_size))
        node.data[offset:end] = data
        node.dirty.append((offset, end))
        node.mtime = time.time_ns()
        return len(data)

    def truncate(self, node: FileNode, length: int) -> None:
        size = len(node.data)
        if length < size:
            del node.data[length:]
        else:
            node.data.extend(bytes(length - size))
        node.low_size = length if node.low_size is None else min(node.low_size, length)
        node.last_write = None
        node.mtime = time.time_ns()

    # ------------------------------------------------------------------ sync
    def fsync(self, node: FileNode) -> None:
        """The file's data and its name (its creation, its renames) become durable."""
        self._commit(lambda op: op.node is node)
        self._flush(node)

    def fsyncdir(self, node: DirNode) -> None:
        """What the directory holds becomes durable, the names of new directories in it too."""
        self._commit(lambda op: any(d is node for d in op.dirs))
        self.unnamed = [
            d
            for d in self.unnamed
            if not (
                d.durable is not None
                and parent_of(d.durable) == node.durable
                and node.entries.get(name_of(d.durable)) is d
            )
        ]

    def _commit(self, wanted: Callable[[NameOp], bool]) -> None:
        """Apply the wanted entries and those they depend on, in log order."""
        chosen: list[NameOp] = []
        for op in reversed(self.log):
            if wanted(op) or any(later.depends_on(op) for later in chosen):
                chosen.append(op)
        for op in reversed(chosen):
            self._apply(op)
            op.done = True
        self.log = [op for op in self.log if not op.done]

    def _apply(self, op: NameOp) -> None:
        real = self._real(op.path)
        if op.kind == "create":
            real.write_bytes(b"")
            op.node.durable = op.path
            assert isinstance(op.node, FileNode)
            # Its data so far is unsynced; all of it is to be written at its fsync.
            op.node.low_size = 0
            op.node.dirty.append((0, len(op.node.data)))
        elif op.kind == "mkdir":
            real.mkdir()
            op.node.durable = op.path
            assert isinstance(op.node, DirNode)
            self.unnamed.append(op.node)
        elif op.kind == "unlink":
            real.unlink()
            op.node.durable = None
        elif op.kind == "rmdir":
            real.rmdir()
            op.node.durable = None
        else:
            assert op.new_path is not None
            os.replace(real, self._real(op.new_path))
            if op.replaced is not None:
                op.replaced.durable = None
            self._moved(op.node, op.path, op.new_path)

    def _moved(self, node: Node, old: str, new: str) -> None:
        node.durable = new
        if isinstance(node, DirNode):
            for name, child in node.entries.items():
                if child.durable == f"{old}/{name}":
                    self._moved(child, child.durable, f"{new}/{name}")

    def _flush(self, node: FileNode) -> None:
        if node.durable is not None and node.unsynced:
            with open(self._real(node.durable), "r+b") as out:
                if node.low_size is not None:
                    out.truncate(node.low_size)
                for start, end in _merged(node.dirty, len(node.data)):
                    out.seek(start)
                    out.write(node.data[start:end])
                out.truncate(len(node.data))
        node.dirty = []
        node.low_size = None
        node.last_write = None

    # ------------------------------------------------------------------ the cut
    def files(self) -> list[FileNode]:
        found: list[FileNode] = []
        stack: list[Node] = [self.root]
        stack.extend(op.node for op in self.log)  # unlinked, maybe still open
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, DirNode):
                stack.extend(node.entries.values())
            elif isinstance(node, FileNode):
                found.append(node)
        return found

    def cut(self, mode: str, rng: random.Random) -> CutReport:
        """Power goes: leave the backing dir as `mode` says the disk would be. The tree must
        not be used afterwards."""
        assert mode in MODES, mode
        report = CutReport(mode)
        report.lost_names = len(self.log)
        files = self.files()
        if mode == "drop":
            for node in files:
                if node.dirty:
                    path = node.durable or "(never named durably)"
                    report.by_file[path] = report.by_file.get(path, 0) + len(node.dirty)
                report.lost_writes += len(node.dirty)
                report.lost_bytes += sum(end - start for start, end in node.dirty)
            for directory in self.unnamed:
                if directory.durable is not None:
                    shutil.rmtree(self._real(directory.durable), ignore_errors=True)
                    report.lost_dirs.append(directory.durable)
            return report
        report.lost_names = 0
        self._commit(lambda op: True)
        self.unnamed = []
        for node in sorted(files, key=lambda n: n.durable or ""):
            last = node.last_write
            path = node.durable
            self._flush(node)
            if last is None or path is None:
                continue
            offset, length, before, old_size = last
            if length == 0:
                continue
            kept = rng.randrange(length)  # strictly less than all of it
            self._tear(path, offset, kept, length, before, old_size)
            report.torn.append(f"{path}: kept {kept} of {length} bytes")
            report.lost_writes += 1
            report.lost_bytes += length - kept
        return report

    def _tear(
        self, path: str, offset: int, kept: int, length: int, before: bytes, old_size: int
    ) -> None:
        """Put back what the last write replaced past its first `kept` bytes."""
        with open(self._real(path), "r+b") as out:
            restore = before[kept:]
            if restore:
                out.seek(offset + kept)
                out.write(restore)
            if offset + length > old_size:
                out.truncate(max(old_size, offset + kept))


def _merged(ranges: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(ranges):
        end = min(end, size)
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]
