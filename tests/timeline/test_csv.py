"""The op table CSV, alone and with measured columns."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from swimlanes.timeline import Timeline, TimelineBuilder
from swimlanes.timeline.formats.csv_export import BASE_COLUMNS, MEASURED_COLUMNS, write_op_csv


def timeline(source: str, stretch: int = 1, offset: int = 0, skip_last: bool = False) -> Timeline:
    b = TimelineBuilder(["s1"], ["H2D", "compute"])
    b.add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=offset,
          issue_end=offset + 1_000, start=offset + 1_000, end=offset + 1_000 + 4_000 * stretch,
          nbytes=8_000_000, label="=HYPERLINK(\"x\")")  # fmt: skip
    b.add(index=1, kind="host", stream=None, engine=None, issue_start=offset + 1_000,
          issue_end=offset + 3_000, label="host")  # fmt: skip
    if not skip_last:
        b.add(index=2, kind="kernel", stream="s1", engine="compute", issue_start=offset + 3_000,
              issue_end=offset + 4_000, start=offset + 5_000 * stretch,
              end=offset + 9_000 * stretch, label="K")  # fmt: skip
    return b.build(source=source, device="h200")


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_single_timeline_table(tmp_path: Path) -> None:
    out = tmp_path / "ops.csv"
    write_op_csv([timeline("simulated")], out)
    rows = _read(out)
    assert list(rows[0]) == list(BASE_COLUMNS)
    assert [r["op"] for r in rows] == ["h2d", "host", "kernel"]
    h2d, host, kernel = rows
    assert (h2d["start_us"], h2d["end_us"], h2d["duration_us"]) == ("1.000", "5.000", "4.000")
    assert h2d["gbps"] == "2000.000"  # 8 MB in 4 us
    assert h2d["bytes"] == "8000000" and h2d["stream"] == "s1" and h2d["engine"] == "H2D"
    # Host work has a host span and no device span.
    assert (host["issue_start_us"], host["issue_end_us"], host["start_us"]) == (
        "1.000",
        "3.000",
        "",
    )
    assert kernel["label"] == "K" and kernel["gbps"] == ""


def test_labels_cannot_become_spreadsheet_formulas(tmp_path: Path) -> None:
    out = tmp_path / "ops.csv"
    write_op_csv([timeline("simulated")], out)
    assert _read(out)[0]["label"] == '\'=HYPERLINK("x")'


def test_measured_columns_and_errors(tmp_path: Path) -> None:
    out = tmp_path / "ops.csv"
    sim = timeline("simulated")
    meas = timeline("measured", stretch=2, offset=7_000_000)
    write_op_csv([sim, meas], out)
    rows = _read(out)
    assert list(rows[0]) == list(BASE_COLUMNS) + list(MEASURED_COLUMNS)
    h2d, host, kernel = rows
    assert h2d["measured_duration_us"] == "8.000"
    # Errors are model minus measurement, the duration error relative to the measured
    # duration, as `swimlanes compare` and the comparison table give them: the measured run
    # is twice as slow, so the model ends early and runs short.
    assert h2d["end_error_us"] == "-4.000" and h2d["start_error_us"] == "0.000"
    assert h2d["duration_error_pct"] == "-50.00"
    assert (kernel["measured_start_us"], kernel["start_error_us"]) == ("10.000", "-5.000")
    # Host work is compared on its host call span (1..3 us in both).
    assert (host["start_error_us"], host["end_error_us"], host["duration_error_pct"]) == (
        "0.000",
        "0.000",
        "0.00",
    )


def test_errors_are_the_comparisons(tmp_path: Path) -> None:
    from swimlanes.timeline.compare import compare_timelines

    out = tmp_path / "ops.csv"
    sim, meas = timeline("simulated"), timeline("measured", stretch=3, offset=123_456)
    write_op_csv([sim, meas], out)
    rows = {int(r["index"]): r for r in _read(out)}
    for op in compare_timelines(sim, meas).rows_json():
        row = rows[op["index"]]
        assert float(row["start_error_us"]) == op["start_error_us"]
        assert float(row["end_error_us"]) == op["end_error_us"]
        assert float(row["duration_error_pct"]) == op["duration_error_pct"]


def test_op_missing_from_measurement_leaves_blanks(tmp_path: Path) -> None:
    out = tmp_path / "ops.csv"
    write_op_csv([timeline("simulated"), timeline("measured", skip_last=True)], out)
    kernel = _read(out)[2]
    assert all(kernel[c] == "" for c in MEASURED_COLUMNS)


def test_no_timeline_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no timeline"):
        write_op_csv([], tmp_path / "x.csv")


def test_csv_of_several_threads_or_gpus_says_whose_each_op_is() -> None:
    import io

    from swimlanes.services.simulation import simulate_file
    from swimlanes.timeline.formats.csv_export import op_table_csv

    examples = Path(__file__).resolve().parents[2] / "resources" / "examples"
    _, one = simulate_file(examples / "two-streams.json", None)
    assert next(csv.reader(io.StringIO(op_table_csv([one])))) == list(BASE_COLUMNS)
    _, threads = simulate_file(examples / "per-thread-default-stream.json", None)
    rows = list(csv.DictReader(io.StringIO(op_table_csv([threads]))))
    assert "device" not in rows[0]  # one GPU
    assert [r["host_thread"] for r in rows] == [
        threads.host_thread_name(i) for i in range(len(threads))
    ]
    assert {r["host_thread"] for r in rows} == {"worker0", "worker1"}
    _, gpus = simulate_file(examples / "peer-copy-split.json", None)
    rows = list(csv.DictReader(io.StringIO(op_table_csv([gpus]))))
    assert {r["device"] for r in rows} == set(gpus.device_names)
