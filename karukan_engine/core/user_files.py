"""Where per-user data lives, how files a user can damage are read, and how user data is written
without ever losing the previous copy.

Every file the engine reads on the user's behalf (config, keymap, romaji table, learning history,
user dictionary) goes through read_user_file(): only regular files are read (a FIFO, a device or
a directory is refused without blocking), and never more than a size cap. What the engine writes
goes through write_atomic() into a private directory (0700, files 0600, as Mozc's profile is).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Iterator

log = logging.getLogger(__name__)

# Size caps: far above any real file, far below what would hurt the engine.
MAX_SETTINGS_BYTES = 4 << 20      # config, keymap, romaji table
MAX_DATA_BYTES = 64 << 20         # learning history, user dictionary

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-(?P<tid>\d+)$")


class UserFileError(OSError):
    """A user file that cannot be read: not a regular file, too large, or an I/O error."""


# Characters no word may hold: C0/C1 controls (Unicode category Cc: NUL, TAB, newlines, ESC,
# DEL, U+0085...), lone surrogates (Cs: not UTF-8, so not sendable over D-Bus) and the line and
# paragraph separators (Zl, Zp). Exactly those categories, as one character class.
_BAD_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def has_control_chars(text: str) -> bool:
    """True when text holds a character that must never reach a preedit or a commit."""
    return _BAD_CHARS.search(text) is not None


def data_dir() -> Path:
    """$XDG_DATA_HOME/karukan (default ~/.local/share/karukan)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "karukan"


def read_user_file(path: str | Path, limit: int = MAX_SETTINGS_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, read without ever blocking.

    Raises FileNotFoundError when nothing is there, UserFileError (an OSError) when the path is
    a directory, FIFO, socket or device, is larger than `limit`, or cannot be read.
    """
    path = Path(path)
    try:
        info = os.stat(path)   # follows symlinks: a link to a regular file is fine
    except FileNotFoundError:
        raise
    except ValueError:   # a NUL in the name
        raise UserFileError(0, "the file name holds a NUL") from None
    except OSError as exc:
        raise UserFileError(exc.errno, f"cannot read {path.name}: {exc.strerror}") from None
    _check_regular(path, info, limit)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UserFileError(exc.errno, f"cannot read {path.name}: {exc.strerror}") from None
    try:
        _check_regular(path, os.fstat(fd), limit)   # the file opened is the one checked
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise UserFileError(0, f"{path.name} is larger than {limit} bytes")
        return b"".join(chunks)
    except UserFileError:
        raise
    except OSError as exc:
        raise UserFileError(exc.errno, f"cannot read {path.name}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _check_regular(path: Path, info: os.stat_result, limit: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise UserFileError(0, f"{path.name} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise UserFileError(0, f"{path.name} is not a regular file")
    if info.st_size > limit:
        raise UserFileError(0, f"{path.name} is larger than {limit} bytes")


def read_user_text(path: str | Path, limit: int = MAX_SETTINGS_BYTES) -> str:
    """read_user_file() decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_user_file(path, limit).decode("utf-8")


def write_atomic(path: Path, data: bytes) -> None:
    """Replace path with data: write a temporary file beside it, fsync, rename, fsync the dir.

    On any failure (a full disk, a crash) the old file stays as it was; a temporary file left by
    a crash is named .<name>.tmp-<pid>-<thread>, is ignored by readers and is removed by
    clean_stale_temps() once its process is gone. The file is private (0600); the data
    directory is made private (0700).
    """
    _private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.unlink(missing_ok=True)   # only this thread of this process uses this name
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE)
        with open(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (flock) on `.<name>.lock` beside path: processes that
    read, merge and write the same file take turns. The lock file is never removed (removing it
    would let two processes lock two different files)."""
    _private_dir(path.parent)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                 PRIVATE_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # (closing releases the lock)


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, mtime_ns, size): changes whenever write_atomic replaces the file."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def _private_dir(directory: Path) -> None:
    """Create the directory 0700; tighten Karukan's own data directory if it is open to others."""
    directory.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    try:
        if directory.resolve() != data_dir().resolve():
            return   # a directory the caller chose (tests, tools): leave its mode alone
        info = directory.stat()
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(directory, stat.S_IMODE(info.st_mode) & ~0o077)
    except OSError:
        pass


def clean_stale_temps(path: Path) -> int:
    """Remove temporary files of `path` left by writers that were killed; return how many."""
    removed = 0
    try:
        names = os.listdir(path.parent)
    except OSError:
        return 0
    me = os.getpid()
    threads = {t.ident for t in threading.enumerate()}
    for name in names:
        match = _TEMP_RE.match(name)
        if match is None or match["name"] != path.name:
            continue
        pid, tid = int(match["pid"]), int(match["tid"])
        if pid == me:
            if tid in threads:
                continue   # a save of this process may be writing it right now
        elif _alive(pid):
            continue
        try:
            os.unlink(path.parent / name)
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True   # someone else's process (or an absurd number): leave its file alone
    return True


def _aside_name(path: Path, n: int) -> Path:
    suffix = f"-{n}" if n else ""
    return path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}{suffix}")


def set_aside(path: Path, why: str) -> Path | None:
    """Move an unreadable file out of the way (never delete what the user may want back).

    Each copy gets a name of its own (.corrupt-<time>[-N]), so two in the same second never
    overwrite each other. None (and a warning) when it cannot be moved: the caller must then
    leave the path alone.
    """
    for n in range(1000):
        target = _aside_name(path, n)
        try:
            _move_no_replace(path, target)
        except FileExistsError:
            continue
        except OSError as exc:
            log.warning("%s was unreadable (%s) and could not be moved aside (%s); it is left as it is",
                        path.name, why, exc.strerror or type(exc).__name__)
            return None
        log.warning("%s was unreadable (%s); moved it to %s and started afresh", path.name, why, target.name)
        return target
    log.warning("%s was unreadable (%s); too many copies set aside already, it is left as it is", path.name, why)
    return None


def keep_copy(path: Path, data: bytes, why: str) -> Path | None:
    """Write `data` (what was read from path) beside it as a set-aside copy; path stays.

    The copy is written whole (and fsynced) under a temporary name first and only then given its
    .corrupt-<time> name, so a failed write (a full disk) leaves no empty or cut-short file that
    looks like a backup."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.unlink(missing_ok=True)   # only this thread of this process uses this name
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE)
        with open(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        for n in range(1000):
            target = _aside_name(path, n)
            try:
                _move_no_replace(tmp, target)
            except FileExistsError:
                continue
            log.warning("%s had entries that could not be used (%s); kept a copy as %s", path.name, why, target.name)
            return target
    except OSError as exc:
        log.warning("%s: could not keep a copy (%s)", path.name, exc.strerror or type(exc).__name__)
        return None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    return None


def _move_no_replace(path: Path, target: Path) -> None:
    """rename(path, target), but FileExistsError instead of replacing an existing target."""
    try:
        os.link(path, target, follow_symlinks=False)   # atomic: fails if target exists
    except FileExistsError:
        raise
    except FileNotFoundError:
        raise
    except OSError:
        # directories and file systems without hard links: check, then rename
        if os.path.lexists(target):
            raise FileExistsError(target) from None
        os.rename(path, target)
        return
    os.unlink(path)
