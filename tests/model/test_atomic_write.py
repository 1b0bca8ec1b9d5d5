"""Atomic writes: the target holds the old or the whole new content, and no temp file stays."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swimlanes.model import atomic_write
from swimlanes.model.atomic_write import (
    STALE_TEMP_SECONDS,
    write_bytes_atomic,
    write_text_atomic,
    write_via_temp_path,
)

OLD = b"the previous good content\n"


def _others(folder: Path, keep: str = "out.txt") -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != keep)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "out.txt"
    path.write_bytes(OLD)
    return path


def test_disk_full_half_way_keeps_the_old_file_and_no_temp(target, monkeypatch) -> None:
    real_write = os.write
    calls = []

    def fills_up(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])  # a short write first
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", fills_up)
    with pytest.raises(OSError, match="No space left"):
        write_bytes_atomic(target, b"x" * 10_000)
    assert len(calls) == 2  # the short write was continued, not taken for the whole
    assert target.read_bytes() == OLD
    assert _others(target.parent) == []


def test_a_write_that_makes_no_progress_is_an_error(target, monkeypatch) -> None:
    monkeypatch.setattr(os, "write", lambda fd, data: 0)
    with pytest.raises(OSError, match="short write: 0 of 5 bytes"):
        write_text_atomic(target, "hello")
    assert target.read_bytes() == OLD
    assert _others(target.parent) == []


def test_a_file_shorter_than_what_was_written_is_an_error(target, monkeypatch) -> None:
    real_write = os.write
    # a file system that acknowledges every byte but keeps fewer
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:3]) and len(data))
    with pytest.raises(OSError, match="short write: 3 of 5 bytes"):
        write_text_atomic(target, "hello")
    assert target.read_bytes() == OLD
    assert _others(target.parent) == []


def test_failed_rename_keeps_the_old_file_and_no_temp(target, monkeypatch) -> None:
    def refuse(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_text_atomic(target, "new")
    assert target.read_bytes() == OLD
    assert _others(target.parent) == []


def test_an_interrupt_mid_write_removes_the_temp_and_propagates(target, monkeypatch) -> None:
    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(target, "new")
    assert target.read_bytes() == OLD
    assert _others(target.parent) == []


def test_parent_that_is_a_file_and_target_that_is_a_folder_are_refused(tmp_path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    with pytest.raises(NotADirectoryError):
        write_text_atomic(not_a_folder / "out.txt", "new")
    folder = tmp_path / "out.csv"
    (folder / "inside").mkdir(parents=True)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        write_text_atomic(folder, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "out.csv"]
    assert [p.name for p in folder.iterdir()] == ["inside"]


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_killed_write_leaves_a_temp_that_the_next_write_removes(target) -> None:
    # A writer killed outright (SIGKILL) between writing and renaming: nothing can clean up.
    code = (
        "import os, signal, sys\n"
        "from swimlanes.model.atomic_write import write_bytes_atomic\n"
        "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
        "write_bytes_atomic(sys.argv[1], b'y' * 100_000)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(target)], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = _others(target.parent)
    assert len(left) == 1 and left[0].startswith(".out.txt.") and left[0].endswith(".tmp")
    assert target.read_bytes() == OLD
    _age(target.parent / left[0], STALE_TEMP_SECONDS + 5)
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert _others(target.parent) == []


def test_only_stale_temps_of_the_same_target_are_removed(target) -> None:
    folder = target.parent
    fresh = folder / ".out.txt.abcd1234.tmp"  # a concurrent writer's, still in use
    other = folder / ".other.txt.abcd1234.tmp"  # another file's
    mine = folder / ".out.txt.x_9y8z7w.tmp"
    not_ours = folder / ".out.txt.notes.tmp"  # a name our writer never makes
    for p in (fresh, other, mine, not_ours):
        p.write_text("stale")
    for p in (other, mine, not_ours):
        _age(p, STALE_TEMP_SECONDS + 5)
    write_text_atomic(target, "new")
    assert _others(folder) == sorted(p.name for p in (fresh, other, not_ours))


def test_temp_path_writer_success_keeps_the_mode(target) -> None:
    target.chmod(0o640)
    write_via_temp_path(target, lambda tmp: tmp.write_bytes(b"%PDF whole"))
    assert target.read_bytes() == b"%PDF whole"
    assert target.stat().st_mode & 0o777 == 0o640
    assert _others(target.parent) == []


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda tmp: tmp.write_bytes(b""), "no data"),
        (lambda tmp: tmp.unlink(), "no data"),
        (
            lambda tmp: (tmp.write_bytes(b"half"), _raise(OSError(errno.ENOSPC, "disk full"))),
            "disk",
        ),
    ],
)
def test_temp_path_writer_failures_keep_the_old_file(target, write, message) -> None:
    with pytest.raises(OSError, match=message):
        write_via_temp_path(target, write)
    assert target.read_bytes() == OLD
    assert _others(target.parent) == []


def test_temp_path_writer_check_refuses_an_incomplete_file(target) -> None:
    def complete(tmp: Path) -> None:
        if not tmp.read_bytes().endswith(b"END"):
            raise OSError(errno.EIO, "incomplete")

    with pytest.raises(OSError, match="incomplete"):
        write_via_temp_path(target, lambda tmp: tmp.write_bytes(b"truncat"), complete)
    assert target.read_bytes() == OLD
    assert _others(target.parent) == []
    write_via_temp_path(target, lambda tmp: tmp.write_bytes(b"all END"), complete)
    assert target.read_bytes() == b"all END"


def _raise(err: BaseException) -> None:
    raise err


def test_io_module_still_exports_the_writers() -> None:
    from swimlanes.model import io

    assert io.write_text_atomic is atomic_write.write_text_atomic
    assert io.dump_json_atomic is atomic_write.dump_json_atomic


def test_a_long_legal_file_name_is_written(tmp_path) -> None:
    """The temp file's name is longer than the target's: it must not pass the 255-byte limit."""
    from swimlanes.model.atomic_write import write_text_atomic

    for name in ("x" * 250 + ".json", "é" * 125 + ".py"):
        target = tmp_path / name
        write_text_atomic(target, "content")
        assert target.read_text(encoding="utf-8") == "content"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["x" * 250 + ".json", "é" * 125 + ".py"]
    )


def test_a_new_file_gets_the_umask_mode(tmp_path) -> None:
    import os

    from swimlanes.model.atomic_write import write_text_atomic

    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640
