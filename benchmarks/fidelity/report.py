"""The fidelity report: measured random pipelines vs their simulation, train and held-out.

``python benchmarks/fidelity/report.py --data DIR [--preset PRESET.json] [--json OUT.json]``

DIR is what the device stage ``fidelity`` packs (``tests/gpu/run_on_device.sh fidelity``):
``host.json``, ``preset.json`` (calibrated in the same call as the runs), ``runs/fid-*.run.json``
(or a packed ``resources/measurements/fidelity-*.json.gz``, see pack.py). Each run is simulated
on the preset (``--preset`` replaces it, e.g. to try a model change on an old calibration) and the
summary is printed for the ``train`` half (even seeds; parameters may be fitted there) and the
``held_out`` half (odd seeds: the figures to quote), as lines of text and JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measurements import load_fidelity_data, preset_as_calibrated_now  # noqa: E402

from swimlanes.engine import get_preset  # noqa: E402
from swimlanes.engine.bands import simulate_band  # noqa: E402
from swimlanes.engine.fidelity import format_summary, run_accuracy, summarize  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a fidelity folder or a packed .json.gz")
    ap.add_argument("--preset", help="simulate on this preset instead of the calibrated one")
    ap.add_argument(
        "--stored-preset",
        action="store_true",
        help="use the stored preset as it was written, not re-derived from the raw calibration",
    )
    ap.add_argument("--json", dest="json_out", help="write the summaries and per-run rows here")
    ap.add_argument("--worst", type=int, default=8, help="list this many worst held-out runs")
    ap.add_argument("--band", action="store_true", help="score prediction bands (engine.bands)")
    ap.add_argument("--band-samples", type=int, default=32, metavar="N")
    args = ap.parse_args()
    data = load_fidelity_data(args.data)
    if args.preset:
        preset = get_preset(args.preset)
    else:
        preset = data.preset if args.stored_preset else preset_as_calibrated_now(data)
    rows: dict[str, list] = {"train": [], "held_out": []}
    incomplete = [r.name for r in data.runs if r.timeline.meta.get("cupti_unmatched")]
    for run in data.runs:
        if run.name in incomplete:  # CUPTI records missing for some ops: no device span
            continue
        band = None
        if args.band:  # the device span's band, with the preset's model-error term
            b = simulate_band(run.pipeline, preset, samples=args.band_samples)
            band = (b.span_low, b.span_high)
        acc = run_accuracy(run.name, run.pipeline, run.timeline, preset, band_ns=band)
        rows[run.split].append(acc)
    gpu = data.host.get("gpu", {}).get("name", "?")
    print(f"{gpu}, host CPU {data.host.get('cpu')}, measured {data.host.get('date')}")
    how = "as stored" if args.stored_preset else "choices re-derived from its raw record"
    print(f"preset: {args.preset or f'calibrated in the same call ({how})'}")
    if incomplete:
        print(f"left out {len(incomplete)} runs whose measurement misses ops: {incomplete}")
    out = {
        "host": data.host,
        "preset": args.preset or "calibrated",
        "incomplete": incomplete,
        "splits": {},
    }
    for split in ("train", "held_out"):
        if not rows[split]:
            continue
        summary = summarize(rows[split])
        out["splits"][split] = {"summary": summary, "runs": [r.to_json() for r in rows[split]]}
        print(format_summary(split, summary))
        print(json.dumps({"split": split, **summary}))
    worst = sorted(rows["held_out"], key=lambda r: -abs(r.error))[: args.worst]
    for r in worst:
        print(
            f"  {r.name}: sim {r.sim_span_ns / 1e3:9.1f} us meas {r.meas_span_ns / 1e3:9.1f} us "
            f"{100 * r.error:+6.1f}%  worst op {r.worst_op}"
        )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
