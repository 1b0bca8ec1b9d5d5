"""Writing a file so that it holds either its old content or the whole new content.

Every file Swimlanes writes (documents, runs, exports, generated code) goes through here. The
new content goes to a hidden temp file in the target's folder (``.NAME.XXXXXXXX.tmp``: the same
file system, so the rename is atomic), is flushed to disk, checked, and then replaces the target
with :func:`os.replace`. On any failure, an interrupt included, the temp file is removed and the
error re-raised; the target is untouched.

A process killed outright (SIGKILL, power loss) cannot remove its temp file, so each write first
removes the temp files of the same target that a dead writer left behind (older than
:data:`STALE_TEMP_SECONDS`, so that a concurrent writer's file is left alone).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TEMP_SUFFIX = ".tmp"
#: A temp file of the target older than this was left by a writer that died.
STALE_TEMP_SECONDS = 60.0
# tempfile.mkstemp's random part: 8 characters of [a-z0-9_].
_RANDOM_PART = r"[a-z0-9_]{8}"


#: A file name's limit in bytes on the usual file systems, and what a temp name adds to it.
_NAME_MAX = 255
_TEMP_EXTRA = len(".") + len(".") + 8 + len(TEMP_SUFFIX)


def _temp_stem(target: Path) -> str:
    """The target's name as its temp files carry it: shortened (whole characters) so that a
    legal target name still gives a legal temp name."""
    name = target.name
    room = _NAME_MAX - _TEMP_EXTRA
    while len(name.encode("utf-8", "surrogateescape")) > room:
        name = name[:-1]
    return name


def _temp_name(target: Path) -> re.Pattern[str]:
    stem = re.escape(_temp_stem(target))
    return re.compile(rf"\.{stem}\.{_RANDOM_PART}{re.escape(TEMP_SUFFIX)}")


def remove_stale_temps(
    path: str | os.PathLike[str], older_than_s: float = STALE_TEMP_SECONDS
) -> int:
    """Remove the temp files that interrupted writes of ``path`` left beside it; returns how
    many. Best effort: a folder that cannot be listed is not an error here."""
    p = Path(path)
    pattern = _temp_name(p)
    cutoff = time.time() - older_than_s
    removed = 0
    try:
        entries = list(os.scandir(p.parent))
    except OSError:
        return 0
    for entry in entries:
        try:
            if (
                pattern.fullmatch(entry.name)
                and entry.stat(follow_symlinks=False).st_mtime < cutoff
            ):
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed


def _new_file_mode(target: Path) -> int:
    """The mode the written file gets: the old file's, else what the umask allows."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    # Read, not set and reset: os.umask would change it for every thread for a moment, and
    # the autosave writes from a worker thread.
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _make_temp(target: Path) -> tuple[int, Path]:
    """An open, empty temp file beside ``target`` (after removing stale ones)."""
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(target))
    remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{_temp_stem(target)}.", suffix=TEMP_SUFFIX, dir=target.parent or "."
    )
    return fd, Path(tmp)


def _discard(tmp: Path) -> None:
    # Best effort: the error being raised already says what went wrong.
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written; a write that makes no progress is an error."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, f"short write: {len(data) - len(view)} of {len(data)} bytes")
        view = view[n:]


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` so that ``path`` holds either the old or the whole new content.

    Raises the OSError that stopped it (no space, no such folder, ...) with ``path`` intact.
    """
    p = Path(path)
    fd, tmp = _make_temp(p)
    try:
        try:
            # mkstemp makes the file private (0600); keep the old file's mode, or the usual one.
            os.fchmod(fd, _new_file_mode(p))
            _write_all(fd, data)
            os.fsync(fd)
            size = os.fstat(fd).st_size
            if size != len(data):
                raise OSError(errno.EIO, f"short write: {size} of {len(data)} bytes")
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except BaseException:
        _discard(tmp)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) so that ``path`` holds either the old or the whole new content."""
    write_bytes_atomic(path, text.encode("utf-8"))


def dump_json_atomic(data: Any, path: str | os.PathLike[str]) -> None:
    """Write ``data`` as indented JSON, atomically."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_via_temp_path(
    path: str | os.PathLike[str],
    write: Callable[[Path], None],
    check: Callable[[Path], None] | None = None,
) -> None:
    """Atomic writing for writers that need a file name (Qt's image, SVG and PDF writers).

    ``write(tmp)`` writes the whole file to ``tmp`` (raising on failure); ``check(tmp)`` then
    raises OSError if what it left is not a complete file (an empty file always is an error).
    Only then is ``tmp`` synced and renamed onto ``path``.
    """
    p = Path(path)
    fd, tmp = _make_temp(p)
    os.close(fd)
    try:
        write(tmp)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise OSError(errno.EIO, "the writer produced no data")
        if check is not None:
            check(tmp)
        _fsync_file(tmp)
        os.chmod(tmp, _new_file_mode(p))
        os.replace(tmp, p)
    except BaseException:
        _discard(tmp)
        raise
