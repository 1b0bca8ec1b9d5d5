"""Fit a preset's model-error term for prediction bands on the TRAINING half, check it on the
held-out half.

``python benchmarks/fidelity/fit_band.py --data DIR [--data DIR2 ...] [--samples N]
[--write PRESET.json] [--shared]``

For each fidelity folder (see report.py) every complete run is simulated as a band
(engine.bands, the preset's run-to-run spread, no model error). On the training half (even
seeds) the model error is fitted: the smallest stretch of the band's low end
(``model_error_low`` <= 0) and high end (``model_error_high`` >= 0), as fractions of the band's
p10 and p90, that puts the measured device span inside the band for ``--target`` of the
training runs (92% by default, a margin over the 90% the band claims). Held-out runs (odd
seeds) are then scored with the fitted term: the coverage and median band width printed are
the figures to quote. ``--write`` stores the fitted term in a preset file's ``spread``
(rerun after any change to the simulator's model: the term is the model's error).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measurements import load_fidelity_data, preset_as_calibrated_now  # noqa: E402

from swimlanes.engine.bands import simulate_band  # noqa: E402
from swimlanes.engine.presets import DevicePreset  # noqa: E402

#: How the misses are split between the two ends, tried in turn (the narrowest band wins).
_LOW_SHARES = np.linspace(0.0, 1.0, 11)


def bands_of(data_dir: str, samples: int, seed: int) -> tuple[DevicePreset, dict[str, np.ndarray]]:
    """Per split: measured span, band p10 and p90 (no model error), as float arrays."""
    data = load_fidelity_data(data_dir)
    base = preset_as_calibrated_now(data)  # as report.py simulates it
    spread = {k: v for k, v in base.spread.items() if not k.startswith("model_error")}
    preset = DevicePreset.from_dict({**base.to_dict(), "spread": spread})
    rows: dict[str, list[tuple[int, int, int]]] = {"train": [], "held_out": []}
    for run in data.runs:
        if run.timeline.meta.get("cupti_unmatched"):  # CUPTI missed ops: no device span
            continue
        band = simulate_band(run.pipeline, preset, samples=samples, seed=seed)
        rows[run.split].append((run.timeline.device_span_ns, band.span_low, band.span_high))
    arrays = {k: np.array(v, dtype=np.float64).reshape(-1, 3) for k, v in rows.items()}
    return data.preset, arrays


def fit(train: np.ndarray, target: float) -> tuple[float, float]:
    """(model_error_low, model_error_high) covering ``target`` of ``train`` with the narrowest
    median band."""
    meas, lo, hi = train.T
    below = meas / lo - 1.0  # the stretch of the low end each run needs (<= 0 if any)
    above = meas / hi - 1.0
    miss = 1.0 - target
    best: tuple[float, float, float] | None = None
    for share in _LOW_SHARES:
        low = min(0.0, float(np.quantile(below, miss * share)))
        high = max(0.0, float(np.quantile(above, 1.0 - miss * (1.0 - share))))
        low = max(low, -0.99)
        width = float(np.median((hi * (1 + high) - lo * (1 + low)) / meas))
        if best is None or width < best[0]:
            best = (width, low, high)
    assert best is not None
    return round(best[1], 4), round(best[2], 4)


def score(rows: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """(coverage %, median band width % of the measured span)."""
    meas, lo, hi = rows.T
    lo, hi = lo * (1 + low), hi * (1 + high)
    inside = (lo <= meas) & (meas <= hi)
    return 100.0 * float(inside.mean()), 100.0 * float(np.median((hi - lo) / meas))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True, help="a fidelity folder (repeat)")
    ap.add_argument("--samples", type=int, default=32, help="band samples per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=0.92, help="training coverage to fit")
    ap.add_argument("--write", help="store the fitted term of the (first) data in this preset")
    ap.add_argument(
        "--shared",
        action="store_true",
        help="also fit one term on all the training halves together and score each held-out half "
        "with it (the term calibrate writes into every preset: engine.bands.FITTED_MODEL_ERROR)",
    )
    args = ap.parse_args()
    if args.shared:
        _shared(args)
    results = []
    for data_dir in args.data:
        preset, rows = bands_of(data_dir, args.samples, args.seed)
        low, high = fit(rows["train"], args.target)
        spread_only = score(rows["held_out"], 0.0, 0.0)
        train, held = score(rows["train"], low, high), score(rows["held_out"], low, high)
        result = {
            "data": Path(data_dir).name,
            "preset": preset.name,
            "train_runs": len(rows["train"]),
            "held_out_runs": len(rows["held_out"]),
            "model_error_low": low,
            "model_error_high": high,
            "train_coverage_pct": round(train[0], 1),
            "held_out_coverage_pct": round(held[0], 1),
            "held_out_median_width_pct": round(held[1], 1),
            "held_out_spread_only_coverage_pct": round(spread_only[0], 1),
            "held_out_spread_only_median_width_pct": round(spread_only[1], 1),
        }
        results.append(result)
        print(
            f"{result['data']}: model error {low:+.3f} / {high:+.3f} (fitted on "
            f"{len(rows['train'])} training runs, {train[0]:.0f}% covered); held out "
            f"({len(rows['held_out'])} runs): measured span inside the band in {held[0]:.1f}%, "
            f"median band width {held[1]:.1f}% of the span (run-to-run spread alone: "
            f"{spread_only[0]:.1f}%, width {spread_only[1]:.1f}%)"
        )
        print(json.dumps(result))
    if args.write:
        _write(Path(args.write), results[0])
    return 0


def _shared(args: argparse.Namespace) -> None:
    rows = {d: bands_of(d, args.samples, args.seed)[1] for d in args.data}
    low, high = fit(np.concatenate([r["train"] for r in rows.values()]), args.target)
    print(f"shared model error {low:+.4f} / {high:+.4f} (fitted on all training halves)")
    for data_dir, r in rows.items():
        coverage, width = score(r["held_out"], low, high)
        print(
            f"  {Path(data_dir).name}: held out ({len(r['held_out'])} runs): measured span "
            f"inside the band in {coverage:.1f}%, median band width {width:.1f}% of the span"
        )


def _write(path: Path, result: dict) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    spread = dict(doc.get("spread") or {})
    spread.update(
        model_error_low=result["model_error_low"], model_error_high=result["model_error_high"]
    )
    doc["spread"] = spread
    DevicePreset.from_dict(doc)  # still a valid preset
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote the model error into {path}")


if __name__ == "__main__":
    raise SystemExit(main())
