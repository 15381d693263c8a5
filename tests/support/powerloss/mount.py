"""Power cuts for the crash ledgers: `PowerLoss` mounts the file system of fs.py (a FUSE process
that keeps unsynced data in memory) over a backing dir, and `cut(broker)` SIGKILLs the broker and
throws away what was never synced in the same instant, unmounts and mounts again on what the
"disk" kept. The broker then starts on `data_dir` as after a real power loss.

`skip_reason()` says why power cuts cannot run here (no /dev/fuse, no fusermount3, no libfuse3
or mfusepy, a mount refused), so the tests that need them skip with that reason."""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
FS_MODULE = "tests.support.powerloss.fs"
MOUNT_TIMEOUT = 10.0
# Cuts per mode per ledger: a few in the suite, `make powerloss` sets 50.
CUTS = int(os.environ.get("POWERLOSS_CUTS", "5"))


class PowerLoss:
    """A file system that loses unsynced data, under `data_dir`. `mode` is how a cut leaves the
    disk (model.py: "drop" or "torn"); `rng` picks where torn writes end."""

    def __init__(self, root: Path, mode: str, rng: random.Random) -> None:
        self.backing = root / "disk"
        self.mount_point = root / "mnt"
        self.data_dir = self.mount_point / "data"
        self.mode = mode
        self.rng = rng
        self.log = root / "powerloss-fs.log"
        self.cuts: list[str] = []  # what each cut lost, one line each
        self._proc: subprocess.Popen[str] | None = None
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mount_point.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ mounting
    def mount(self) -> PowerLoss:
        assert self._proc is None, "already mounted"
        with self.log.open("a") as err:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", FS_MODULE, self.backing, self.mount_point],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                cwd=ROOT,
            )
        wait_until(
            self._mounted,
            timeout=MOUNT_TIMEOUT,
            message=lambda: f"power-loss file system not mounted:\n{self._tail()}",
        )
        return self

    def _mounted(self) -> bool:
        assert self._proc is not None
        if self._proc.poll() is not None:
            raise AssertionError(f"power-loss file system exited:\n{self._tail()}")
        return os.path.ismount(self.mount_point)

    def _tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def unmount(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _fusermount(self.mount_point)
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(MOUNT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    # ------------------------------------------------------------------ the cut
    def cut(self, victim: subprocess.Popen | None) -> str:
        """SIGKILL `victim` (the broker's process) and drop (or tear) what it never synced, as
        one step; then unmount and mount the file system again. Returns what the cut lost."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        pid = victim.pid if victim is not None and victim.poll() is None else 0
        proc.stdin.write(f"cut {pid} {self.mode} {self.rng.randrange(1 << 30)}\n")
        proc.stdin.flush()
        answer = _read_line(proc.stdout)
        assert answer.startswith("cut "), f"power-loss file system: {answer!r}\n{self._tail()}"
        if victim is not None:
            victim.wait(MOUNT_TIMEOUT)
        self.unmount()
        self.mount()
        self.cuts.append(answer[4:].strip())
        return self.cuts[-1]

    def __enter__(self) -> PowerLoss:
        return self.mount()

    def __exit__(self, *exc: object) -> None:
        self.unmount()


def _read_line(stream: IO[str]) -> str:
    line = stream.readline()
    if not line:
        raise AssertionError("power-loss file system closed its output")
    return line


def _fusermount(mount_point: Path) -> None:
    """Unmount; lazily if something still holds it (a dying process)."""
    for args in (("-u",), ("-u", "-z")):
        done = subprocess.run(
            ["fusermount3", *args, str(mount_point)], capture_output=True, text=True
        )
        if done.returncode == 0 or not _in_mount_table(mount_point):
            return
    raise AssertionError(f"cannot unmount {mount_point}: {done.stderr.strip()}")


def _in_mount_table(mount_point: Path) -> bool:
    """Whether anything is mounted there (os.path.ismount cannot tell for a file system that
    answers every call with EIO, as this one does after a cut)."""
    target = str(mount_point.resolve()).encode()
    with open("/proc/self/mountinfo", "rb") as table:
        return any(line.split()[4] == target for line in table)


@functools.cache
def skip_reason() -> str | None:
    """None when power cuts can run here; otherwise why not, in one line."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: power-loss tests need FUSE"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not usable by this user"
    if shutil.which("fusermount3") is None:
        return "fusermount3 not found (install Debian's fuse3)"
    try:
        import mfusepy  # noqa: F401  (loads libfuse3)
    except (ImportError, OSError) as err:
        return f"mfusepy / libfuse3 not available ({err})"
    with tempfile.TemporaryDirectory(prefix="rabbitish-fuse-probe-") as tmp:
        try:
            with PowerLoss(Path(tmp), "drop", random.Random(0)) as power:
                (power.mount_point / "probe").write_bytes(b"x")
        except AssertionError as err:
            return f"a FUSE mount was refused here: {str(err).splitlines()[-1][:200]}"
    return None
