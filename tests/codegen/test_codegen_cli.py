"""``swimlanes codegen`` where writing or generating fails: ``error: ...``, exit code 2, no
traceback, no temporary file left, and an existing OUT keeps its old content."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.codegen import CodegenError, generate_cuda, generate_python
from swimlanes.model.atomic_write import write_text_atomic
from swimlanes.model.document import Op, Pipeline
from swimlanes.resources import example_path

EXAMPLE = str(example_path("two-streams"))
LANGS = ["python", "cuda"]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _codegen(lang: str, out: str | Path, capsys) -> tuple[int, str]:
    code = main(["codegen", EXAMPLE, "--lang", lang, "-o", str(out)])
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("lang", LANGS)
def test_out_under_a_regular_file(lang: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "file").write_text("not a folder")
    code, err = _codegen(lang, tmp_path / "file" / "p.out", capsys)
    assert code == 2
    assert err.startswith(f"error: cannot write {tmp_path / 'file' / 'p.out'}: ")
    assert "Traceback" not in err and err.count("\n") == 1
    assert (tmp_path / "file").read_text() == "not a folder"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("lang", LANGS)
def test_out_in_a_missing_folder(lang: str, tmp_path: Path, capsys) -> None:
    code, err = _codegen(lang, tmp_path / "missing" / "p.out", capsys)
    assert code == 2 and err.startswith("error: cannot write ") and "No such file" in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("lang", LANGS)
def test_out_is_a_folder(lang: str, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep").write_text("kept")
    code, err = _codegen(lang, folder, capsys)
    assert code == 2 and err.startswith(f"error: cannot write {folder}: ")
    assert folder.is_dir() and [p.name for p in folder.iterdir()] == ["keep"]
    assert _leftovers(tmp_path) == []


def test_out_with_a_nul_byte(tmp_path: Path, capsys) -> None:
    code, err = _codegen("python", str(tmp_path / "p\0.py"), capsys)
    assert code == 2 and err.startswith("error: cannot write ")
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_full_disk_keeps_the_old_out_and_leaves_no_temporary_file(
    lang: str, failing: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    out = tmp_path / "p.out"
    out.write_text("old content")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, failing, full)  # what the atomic writer calls
    code, err = _codegen(lang, out, capsys)
    monkeypatch.undo()
    assert code == 2
    assert err == f"error: cannot write {out}: No space left on device\n"
    assert out.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.out"]


def test_a_pipeline_the_code_cannot_hold_is_an_error(tmp_path: Path, capsys) -> None:
    doc = tmp_path / "big.json"
    doc.write_text(
        json.dumps(
            {
                "format": "swimlanes-pipeline",
                "version": 1,
                "program": [{"op": "h2d", "bytes": 10**30}],
            }
        )
    )
    out = tmp_path / "p.cu"
    out.write_text("old content")
    for lang in LANGS:
        assert main(["codegen", str(doc), "--lang", lang, "-o", str(out)]) == 2
        err = capsys.readouterr().err
        # refused by the loader's limits, or else by the generator's own
        assert err.startswith("error: ") and "program[0].bytes" in err
        assert "Traceback" not in err
    assert out.read_text() == "old content"
    assert _leftovers(tmp_path) == []


def test_the_generators_refuse_numbers_the_code_cannot_hold(capsys, monkeypatch) -> None:
    """An in-memory pipeline is not validated: the generators check what they write, and the
    command says so."""
    import swimlanes.commands.codegen as command

    huge = Pipeline("huge", [], [Op("h2d", bytes=10**30)])
    for generate in (generate_python, generate_cuda):
        with pytest.raises(CodegenError, match=r"program\[0\]\.bytes: .* does not fit"):
            generate(huge)
    for blocks in (-1, 2**31):
        with pytest.raises(CodegenError, match=r"program\[0\]\.blocks"):
            generate_cuda(Pipeline("k", [], [Op("kernel", blocks=blocks, threads=1, block_us=1)]))
    with pytest.raises(CodegenError, match=r"program\[0\]\.duration_us"):
        generate_python(Pipeline("h", [], [Op("host", duration_us=float("inf"))]))
    with pytest.raises(CodegenError, match=r"program\[0\]\.op"):
        generate_cuda(Pipeline("x", [], [Op("launch_missiles")]))
    monkeypatch.setattr(command, "load_pipeline", lambda path: huge)
    assert main(["codegen", EXAMPLE, "--lang", "cuda", "-o", "never-written.cu"]) == 2
    assert capsys.readouterr().err.startswith("error: cannot generate cuda code: program[0].bytes")
    assert not Path("never-written.cu").exists()


def test_success_replaces_out_and_keeps_its_mode(tmp_path: Path, capsys) -> None:
    out = tmp_path / "p.py"
    write_text_atomic(out, "old")
    out.chmod(0o640)
    code, _ = _codegen("python", out, capsys)
    assert code == 0 and out.read_text().startswith("#!/usr/bin/env python3\n")
    assert out.stat().st_mode & 0o777 == 0o640
    assert _leftovers(tmp_path) == []


def test_the_command_prints_one_error_line_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    run = subprocess.run(
        [sys.executable, "-m", "swimlanes", "codegen", EXAMPLE, "--lang", "cuda", "-o"]
        + [str(tmp_path / "file" / "p.cu")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    assert run.stderr.startswith("error: cannot write ") and run.stderr.count("\n") == 1
    assert run.stdout == ""
