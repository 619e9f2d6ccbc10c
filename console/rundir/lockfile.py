"""Exclusive locks that also work where ``flock`` does not (Lustre mounted without ``-o flock``,
some NFS setups): ``flock`` first; when it fails with ENOSYS, EINVAL, EOPNOTSUPP or ENOLCK, an
atomic lock file ``<path>.excl`` created with ``O_CREAT|O_EXCL`` holding its owner
(``{"host", "pid", "expires", "token"}``).

A fallback lock is stale, and is taken over, once its expiry has passed, or at once when its owner
is a process of this host that no longer exists. A holder keeps a long lock (the Slurm follower's)
alive with :meth:`LockFile.refresh`. The takeover renames the stale file aside and checks that it
took the stale owner's file, so two waiters never both win.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from console.fileio import read_json

FALLBACK_ERRNOS = frozenset({errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOLCK})
_flock = fcntl.flock  # the OS boundary (tests inject an errno here)


class LockTimeout(TimeoutError):
    pass


def _host() -> str:
    return socket.gethostname().split(".")[0]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_owner(excl: Path) -> dict[str, Any] | None:
    data = read_json(excl)
    return data if isinstance(data, dict) else None


def owner_stale(owner: dict[str, Any] | None, now: float | None = None) -> bool:
    """An owner record that no longer protects anything (expired, or a dead process of this host).
    An unreadable record (a writer between create and write) is not stale."""
    if owner is None:
        return False
    now = time.time() if now is None else now
    try:
        if float(owner.get("expires", 0)) < now:
            return True
        return owner.get("host") == _host() and not _pid_alive(int(owner.get("pid", 0)))
    except (TypeError, ValueError):
        return True


class LockFile:
    """``acquire()`` / ``release()`` (or ``with``); ``mode`` is ``flock`` or ``excl`` once held."""

    def __init__(self, path: Path, expiry_s: float = 30.0, poll_s: float = 0.05) -> None:
        self.path = Path(path)
        self.excl = self.path.with_name(self.path.name + ".excl")
        self.expiry_s = expiry_s
        self.poll_s = poll_s
        self.mode: str | None = None
        self._fd: int | None = None
        self._token: str | None = None

    # ---- flock -------------------------------------------------------------------------
    def _try_flock(self, blocking: bool) -> bool | None:
        """True: held; False: busy; None: flock does not work here."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            os.close(fd)
            if exc.errno in FALLBACK_ERRNOS:
                return None
            raise
        self._fd = fd
        self.mode = "flock"
        return True

    # ---- O_EXCL lock file ---------------------------------------------------------------
    def _owner(self) -> dict[str, Any]:
        return {
            "host": _host(),
            "pid": os.getpid(),
            "expires": time.time() + self.expiry_s,
            "token": self._token,
        }

    def _try_excl(self) -> bool:
        token = uuid.uuid4().hex
        try:
            fd = os.open(self.excl, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            self._take_over_stale()
            return False
        self._token = token
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self._owner(), fh)
            fh.flush()
            os.fsync(fh.fileno())
        self.mode = "excl"
        return True

    def _take_over_stale(self) -> None:
        owner = read_owner(self.excl)
        if not owner_stale(owner):
            return
        aside = self.excl.with_name(f"{self.excl.name}.stale.{uuid.uuid4().hex}")
        try:
            os.rename(self.excl, aside)
        except FileNotFoundError:
            return  # someone else took it over first
        moved = read_owner(aside)
        if moved is not None and owner is not None and moved.get("token") != owner.get("token"):
            # between our read and the rename a new owner made a fresh lock: put it back
            with contextlib.suppress(OSError):
                os.link(aside, self.excl)
        with contextlib.suppress(OSError):
            os.unlink(aside)

    # ---- public --------------------------------------------------------------------------
    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        use_flock = True
        while True:
            if use_flock:
                # a bounded wait polls flock without blocking, so the timeout holds
                got = self._try_flock(blocking and deadline is None)
                if got:
                    return True
                if got is None:
                    use_flock = False
            if not use_flock and self._try_excl():
                return True
            if not blocking:
                return False
            if deadline is not None and time.monotonic() >= deadline:
                raise LockTimeout(f"{self.path}: still locked after {timeout}s")
            time.sleep(self.poll_s)

    def refresh(self) -> None:
        """Push the expiry of a held fallback lock forward (nothing to do under flock)."""
        if self.mode != "excl":
            return
        owner = read_owner(self.excl)
        if owner is not None and owner.get("token") != self._token:
            return  # taken over: we were presumed dead
        tmp = self.excl.with_name(f"{self.excl.name}.tmp.{os.getpid()}")
        tmp.write_text(json.dumps(self._owner()), encoding="utf-8")
        os.replace(tmp, self.excl)

    def release(self) -> None:
        if self.mode == "flock" and self._fd is not None:
            with contextlib.suppress(OSError):
                _flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
        elif self.mode == "excl":
            owner = read_owner(self.excl)
            if owner is not None and owner.get("token") == self._token:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.excl)
        self._fd = None
        self.mode = None
        self._token = None

    def __enter__(self) -> LockFile:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_locked(path: Path) -> bool:
    """Does another process hold the lock on ``path`` (either kind)?"""
    path = Path(path)
    excl = path.with_name(path.name + ".excl")
    owner = read_owner(excl)
    if owner is not None and not owner_stale(owner):
        return True
    if not path.exists():
        return False
    probe = LockFile(path)
    got = probe._try_flock(blocking=False)
    if got:
        probe.release()
        return False
    return got is False


def exclusive(path: Path, expiry_s: float = 30.0) -> LockFile:
    """The lock on ``path``, for a ``with`` block that holds it (blocks until it is free)."""
    return LockFile(path, expiry_s=expiry_s)
