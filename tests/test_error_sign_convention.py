"""One comparison, every way out of the app: the same signed errors (model minus measurement).

two-streams against its shipped H200 run goes through the compare API, ``swimlanes compare``
(JSON and text), the ``export --measured`` CSV, the Perfetto export's op args and the
comparison table, and every path must give the same number with the same sign.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from swimlanes.cli import main
from swimlanes.engine import get_preset, simulate
from swimlanes.model.io import load_pipeline
from swimlanes.timeline.compare import compare_timelines
from swimlanes.timeline.formats.io import load_run

REPO = Path(__file__).resolve().parent.parent
PIPELINE = REPO / "resources" / "examples" / "two-streams.json"
RUN = REPO / "resources" / "measurements" / "two-streams.h200.json"
KEYS = ("start_error_us", "end_error_us", "duration_error_pct")


@pytest.fixture(scope="module")
def reference() -> dict[int, dict]:
    """The compare API's rows by program index (simulated on h200, the measured GPU's preset)."""
    measured, _ = load_run(RUN)
    simulated = simulate(load_pipeline(PIPELINE), get_preset("h200"))
    rows = {r["index"]: r for r in compare_timelines(simulated, measured).rows_json()}
    ends = [r["end_error_us"] for r in rows.values()]
    assert min(ends) < 0 < max(ends), "needs errors of both signs to tell a flipped sign"
    for r in rows.values():  # the convention itself: model minus measurement
        assert r["end_error_us"] == pytest.approx(r["sim_end_us"] - r["meas_end_us"], abs=0.002)
        assert r["start_error_us"] == pytest.approx(
            r["sim_start_us"] - r["meas_start_us"], abs=0.002
        )
    return rows


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_compare_command_json_and_text(reference, capsys) -> None:
    out = _cli(["compare", str(PIPELINE), "--measured", str(RUN), "--json"], capsys)
    data = json.loads(out)
    assert {r["index"]: r for r in data["ops"]} == reference
    text = _cli(["compare", str(PIPELINE), "--measured", str(RUN)], capsys)
    assert "errors = model - measurement" in text
    rows = [line.split() for line in text.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == len(reference)
    for row in rows:
        # "#  op  label...  sim start  sim end  meas start  meas end  end err  [!]"
        numbers = [w for w in row if w != "!"]
        assert numbers[-1] == f"{reference[int(row[0])]['end_error_us']:.1f}"


def test_csv_export(reference, tmp_path, capsys) -> None:
    out = tmp_path / "ops.csv"
    _cli(["export", str(PIPELINE), "--measured", str(RUN), "-o", str(out)], capsys)
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(reference)
    for row in rows:
        want = reference[int(row["index"])]
        assert {k: float(row[k]) for k in KEYS} == {k: want[k] for k in KEYS}, row["index"]


def test_perfetto_export(reference, tmp_path, capsys) -> None:
    out = tmp_path / "trace.json"
    _cli(["export", str(PIPELINE), "--measured", str(RUN), "-o", str(out)], capsys)
    events = json.loads(out.read_text(encoding="utf-8"))["traceEvents"]
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert {e["pid"] for e in ops} == {1, 2}  # simulated and measured both carry them
    assert len(ops) == 2 * len(reference)
    for e in ops:
        want = reference[e["args"]["index"]]
        assert {k: e["args"][k] for k in KEYS} == {k: want[k] for k in KEYS}


def test_comparison_table(reference, qapp) -> None:
    from swimlanes.ui.comparison_table import COLUMNS, ComparisonTableModel

    measured, _ = load_run(RUN)
    simulated = simulate(load_pipeline(PIPELINE), get_preset("h200"))
    model = ComparisonTableModel()
    model.set_comparison(compare_timelines(simulated, measured))
    col = {key: c for c, (_, key, _) in enumerate(COLUMNS)}
    assert model.rowCount() == len(reference)
    for row in range(model.rowCount()):

        def cell(key: str, row: int = row) -> str:
            return model.data(model.index(row, col[key]))

        want = reference[int(cell("index"))]
        assert float(cell("start_err").replace(",", "")) == want["start_error_us"]
        shown = cell("dur_err_pct")  # one decimal, with its sign
        assert shown.endswith("%") and shown[0] in "+-"
        assert float(shown[:-1]) == pytest.approx(want["duration_error_pct"], abs=0.051)
