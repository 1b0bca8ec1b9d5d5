"""``swimlanes schema``: prints the file formats' JSON Schemas; the shipped copies are its
output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.commands.schema import SCHEMAS, schema_text
from swimlanes.resources import resource_dir

SCHEMA_DIR = resource_dir() / "schema"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_shipped_schema_files_equal_the_generated_ones(name: str) -> None:
    shipped = SCHEMA_DIR / f"{name}.schema.json"
    assert shipped.is_file(), f"{shipped.name} is not shipped"
    assert shipped.read_text(encoding="utf-8") == schema_text(name), (
        f"resources/schema/{name}.schema.json is out of date: regenerate it with "
        f"`swimlanes schema {name} -o resources/schema/{name}.schema.json`"
    )


def test_no_other_schema_files_are_shipped() -> None:
    assert sorted(p.name for p in SCHEMA_DIR.iterdir()) == sorted(
        f"{n}.schema.json" for n in SCHEMAS
    )


@pytest.mark.parametrize("name", ["pipeline", "run", "timeline"])
def test_prints_each_schema(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", name]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["format"] == {"const": f"swimlanes-{name}"}


def test_prints_the_pipeline_schema_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == schema_text("pipeline")


def test_writes_a_schema_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "run.schema.json"
    assert main(["schema", "run", "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert target.read_text(encoding="utf-8") == schema_text("run")


def test_an_unwritable_output_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", "-o", str(tmp_path / "missing" / "x.json")]) == 2
    assert capsys.readouterr().err.startswith("error: cannot write")


def test_an_unknown_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["schema", "preset"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
