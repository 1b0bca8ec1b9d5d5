"""What ``swimlanes capture`` runs: the program after ``--`` as Python would run it (a script,
``-m module`` or ``-c CODE``), and clear refusals for what it cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest

from swimlanes.commands.capture import program_argv, program_stem
from swimlanes.gpu.capture import CaptureFailed, _run
from swimlanes.services.errors import CommandError


def test_python_and_its_flags_are_taken_as_python_takes_them(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("pass\n", encoding="utf-8")
    assert program_argv(["--", "python3", str(script), "--epochs", "2"]) == [
        str(script), "--epochs", "2",
    ]  # fmt: skip
    assert program_argv(["python", "-m", "pkg.train", "-x"]) == ["-m", "pkg.train", "-x"]
    assert program_argv(["python", "-c", "print(1)", "a"]) == ["-c", "print(1)", "a"]
    assert program_stem([str(script)]) == "train"
    assert program_stem(["-m", "pkg.train"]) == "train"
    assert program_stem(["-c", "print(1)"]) == "program"


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--"], "no program to capture"),
        (["python", "-c"], "-c needs the program's code"),
        (["python", "-m"], "-m needs a module name"),
        (["python", "nowhere.py"], "no such program: nowhere.py"),
    ],
)
def test_what_cannot_run_is_refused_with_a_reason(words: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        program_argv(words)


def test_code_runs_as_main_with_its_arguments(tmp_path: Path) -> None:
    out = tmp_path / "seen.txt"
    code = f"import sys; open({str(out)!r}, 'w').write(__name__ + ' ' + ' '.join(sys.argv))"
    _run(["-c", code, "x", "y"])
    assert out.read_text(encoding="utf-8") == "__main__ -c x y"


def test_code_that_fails_fails_the_capture_with_its_error() -> None:
    with pytest.raises(CaptureFailed, match="exited with status 3"):
        _run(["-c", "import sys; sys.exit(3)"])
    with pytest.raises(CaptureFailed, match="raised ZeroDivisionError"):
        _run(["-c", "1 / 0"])
