"""The accuracy table: every shipped example's measured run vs its simulation on a preset.

``python3 tests/gpu/accuracy.py --preset PRESET.json --runs DIR --out PREFIX`` reads
``DIR/<example>.h200.json`` (written by ``swimlanes run -o``), simulates each example on the
preset, and writes ``PREFIX.json`` and ``PREFIX.md``: makespans, errors, median and worst
|error|, and, to say where the model misses, the duration and start errors per op kind.

``--fit`` also fits the preset's timing figures over all ops of all the measured runs
(``swimlanes.engine.fit.fit_timing``: one global value per figure, never per example), prints
them as JSON and writes ``PREFIX.fit.json``; the table is then for the preset with them put in.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.fit import fit_timing
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_names, example_path
from swimlanes.timeline.compare import accuracy_table, compare_timelines
from swimlanes.timeline.formats.io import load_run


def per_kind(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Median duration error (%) and median |end error| (us) per op kind."""
    dur: dict[str, list[float]] = defaultdict(list)
    end: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["duration_error_pct"] is not None:
            dur[r["op"]].append(r["duration_error_pct"])
        if r["end_error_us"] is not None:
            end[r["op"]].append(abs(r["end_error_us"]))
    return {
        k: {
            "ops": len(end[k]),
            "median_duration_error_pct": round(statistics.median(dur[k]), 2) if dur[k] else None,
            "median_abs_end_error_us": round(statistics.median(end[k]), 2) if end[k] else None,
        }
        for k in sorted(end)
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", required=True)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fit", action="store_true", help="fit the timing figures first")
    args = ap.parse_args()
    preset = get_preset(args.preset)
    if args.fit:
        runs = []
        for name in example_names():
            run_path = Path(args.runs) / f"{name}.h200.json"
            if run_path.is_file():
                runs.append((load_pipeline(example_path(name)), load_run(run_path)[0]))
        fitted = fit_timing(runs, preset)
        text = json.dumps(fitted, indent=2)
        Path(f"{args.out}.fit.json").write_text(text + "\n", encoding="utf-8")
        print(text)
        preset = replace(preset, **fitted)
    rows, details = [], {}
    for name in example_names():
        run_path = Path(args.runs) / f"{name}.h200.json"
        if not run_path.is_file():
            print(f"{name}: no measured run")
            continue
        measured, _ = load_run(run_path)
        simulated = simulate(load_pipeline(example_path(name)), preset)
        cmp = compare_timelines(simulated, measured).to_json()
        sim_ms, meas_ms = simulated.makespan_ns / 1e6, measured.makespan_ns / 1e6
        rows.append((name, sim_ms, meas_ms))
        worst = sorted(
            (r for r in cmp["ops"] if r["end_error_us"] is not None),
            key=lambda r: -abs(r["end_error_us"]),
        )[:5]
        details[name] = {
            "per_kind": per_kind(cmp["ops"]),
            "flagged": sum(1 for r in cmp["ops"] if r["flagged"]),
            "worst_ops": worst,
            "backend": measured.meta.get("backend"),
        }
        print(
            f"{name:28s} sim {sim_ms:9.3f} ms  measured {meas_ms:9.3f} ms  "
            f"error {100 * (sim_ms - meas_ms) / meas_ms:+6.1f}%  flagged {details[name]['flagged']}"
        )
    table = accuracy_table(rows)
    out = {**table.to_json(), "preset": str(args.preset), "details": details}
    Path(f"{args.out}.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    Path(f"{args.out}.md").write_text(table.to_markdown(), encoding="utf-8")
    print(table.to_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
