"""How closely rebuilt pipelines replay captured programs: ``swimlanes capture`` traces
rebuilt on a preset calibrated on the same host, simulated unedited, against the measurement.

``python benchmarks/capture_replay.py --preset PRESET.json TRACE.capture.json.gz ...
[--out DIR]`` prints one line per trace and a JSON line per trace; with ``--out`` it also
writes each rebuilt pipeline and its run (``NAME.json``, ``NAME.run.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from swimlanes.model.io import save_pipeline
from swimlanes.services.trace_pipeline import rebuild
from swimlanes.timeline.formats.io import load_timeline_any, save_run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", help="capture traces (.capture.json.gz)")
    ap.add_argument("--preset", required=True, help="the preset calibrated on the capture's host")
    ap.add_argument("--out", help="write each rebuilt pipeline and run here")
    args = ap.parse_args()
    for path in map(Path, args.traces):
        name = path.name.removesuffix(".gz").removesuffix(".json").removesuffix(".capture")
        timeline, _ = load_timeline_any(path)
        timeline.name = name
        result = rebuild(timeline, args.preset, name=name)
        rebuilt = result.rebuilt
        line = {
            "trace": name,
            "device": timeline.device,
            "host": timeline.meta.get("host", {}).get("hostname"),
            "date": timeline.meta.get("capture", {}).get("date"),
            "ops": len(rebuilt.pipeline.program),
            "measured_us": round(rebuilt.measured.makespan_ns / 1000, 1),
            "simulated_us": round(result.simulated.makespan_ns / 1000, 1),
            "error_pct": round(100 * (result.replay_error or 0.0), 2),
            "left_out": rebuilt.notes,
        }
        print(
            f"{name:36s} {line['ops']:5d} ops  measured {line['measured_us']:10.1f} us  "
            f"simulated {line['simulated_us']:10.1f} us  {line['error_pct']:+6.2f}%"
        )
        print(json.dumps(line))
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            save_pipeline(rebuilt.pipeline, out / f"{name}.json")
            save_run(out / f"{name}.run.json", rebuilt.measured, rebuilt.pipeline)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
