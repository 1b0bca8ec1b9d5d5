"""``swimlanes examples``: list the shipped examples, print one, write one to a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.model import load_pipeline
from swimlanes.resources import example_names, example_path


def test_lists_every_example_with_its_lesson(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line and line[0] != " "}
    for name in example_names():
        lesson = json.loads(example_path(name).read_text(encoding="utf-8"))["lesson"]
        assert name in lines, name
        assert lesson in lines[name]
    assert "Two streams: overlap copies with compute" in lines["two-streams"]
    assert "[ideal, 7 ops]" in lines["two-streams"]


def test_prints_one_example_as_its_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "ping-pong"]) == 0
    out = capsys.readouterr().out
    assert out == example_path("ping-pong").read_text(encoding="utf-8")
    assert json.loads(out)["format"] == "swimlanes-pipeline"


def test_writes_one_example_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mine.json"
    assert main(["examples", "chunked-overlap", "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert load_pipeline(target) == load_pipeline(example_path("chunked-overlap"))


def test_writing_into_a_folder_uses_the_example_name(tmp_path: Path) -> None:
    assert main(["examples", "priority", "--output", str(tmp_path)]) == 0
    assert load_pipeline(tmp_path / "priority.json").name == "stream priorities"


def test_unknown_example_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "three-streams"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no example named 'three-streams'; choose one of ")
    assert "two-streams" in err and "Traceback" not in err


def test_unwritable_output_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["examples", "priority", "-o", str(tmp_path / "no" / "such" / "dir.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write ") and "dir.json" in err


def test_output_without_a_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "-o", "x.json"]) == 2
    assert "needs an example NAME" in capsys.readouterr().err


def test_no_installed_examples_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "examples").mkdir()
    monkeypatch.setenv("SWIMLANES_RESOURCES", str(tmp_path))
    assert main(["examples"]) == 2
    assert "no examples are installed" in capsys.readouterr().err


def test_commands_accept_a_shipped_example_by_name(tmp_path, capsys, monkeypatch) -> None:
    import json

    from swimlanes.cli import main as cli_main

    monkeypatch.chdir(tmp_path)  # no file of that name here: the name means the example
    assert cli_main(["simulate", "two-streams", "--json", "--device", "ideal"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan_us"] == 4000.0
    assert cli_main(["codegen", "two-streams", "--lang", "cuda", "-o", "p.cu"]) == 0
    assert (tmp_path / "p.cu").read_text().count("cudaMemcpyAsync") == 4
    assert cli_main(["simulate", "no-such-example"]) == 2
    assert "no such file" in capsys.readouterr().err
