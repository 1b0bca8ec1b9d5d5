"""Fidelity measurements on disk: the device stage's folder, and the packed file committed under
``resources/measurements/fidelity-<gpu>-<date>.json.gz``.

``python benchmarks/fidelity/measurements.py pack DIR OUT.json.gz`` packs a folder written by
``tests/gpu/run_on_device.sh fidelity`` (host.json, preset.json, calibration-raw.json,
runs/fid-NNNN.run.json) into one gzipped JSON document (``"format": "swimlanes-fidelity"``):
the host, the preset calibrated in the same call, the raw calibration and every run (timeline
and pipeline) with its seed and split. :func:`load_fidelity_data` reads either form.
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import split  # noqa: E402

from swimlanes.engine.bands import FITTED_MODEL_ERROR  # noqa: E402
from swimlanes.engine.preset_model import FITTED_BY_CALIBRATE  # noqa: E402
from swimlanes.engine.presets import DevicePreset  # noqa: E402
from swimlanes.gpu.calibration_programs import (  # noqa: E402
    copy_order_of,
    cross_checked_bidirectional,
    queue_choices,
)
from swimlanes.model.document import Pipeline  # noqa: E402
from swimlanes.timeline.formats.io import load_run, run_from_dict, run_to_dict  # noqa: E402
from swimlanes.timeline.timeline import Timeline  # noqa: E402

FORMAT = "swimlanes-fidelity"
VERSION = 1


@dataclass
class FidelityRun:
    name: str
    seed: int
    split: str
    timeline: Timeline
    pipeline: Pipeline


@dataclass
class FidelityData:
    host: dict[str, Any]
    preset: DevicePreset
    raw: dict[str, Any]
    runs: list[FidelityRun]


def _seed(name: str) -> int:
    return int(name.split("-")[1].split(".")[0])


def _from_folder(folder: Path) -> FidelityData:
    runs = []
    for path in sorted((folder / "runs").glob("fid-*.run.json")):
        timeline, pipeline = load_run(path)
        if pipeline is None:
            raise ValueError(f"{path}: the run holds no pipeline")
        seed = _seed(path.name)
        runs.append(FidelityRun(path.name.split(".")[0], seed, split(seed), timeline, pipeline))
    raw_path = folder / "calibration-raw.json"
    return FidelityData(
        host=json.loads((folder / "host.json").read_text(encoding="utf-8")),
        preset=DevicePreset.from_dict(json.loads((folder / "preset.json").read_text("utf-8"))),
        raw=json.loads(raw_path.read_text("utf-8")) if raw_path.is_file() else {},
        runs=runs,
    )


def _from_packed(path: Path) -> FidelityData:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise ValueError(f"{path}: not a {FORMAT} v{VERSION} file")
    runs = []
    for r in doc["runs"]:
        timeline, pipeline = run_from_dict(r["run"])
        assert pipeline is not None
        timeline.name = r["name"]
        runs.append(FidelityRun(r["name"], r["seed"], r["split"], timeline, pipeline))
    return FidelityData(doc["host"], DevicePreset.from_dict(doc["preset"]), doc["raw"], runs)


def load_fidelity_data(path: str | Path) -> FidelityData:
    """A device stage folder or a packed ``.json.gz``."""
    path = Path(path)
    return _from_folder(path) if path.is_dir() else _from_packed(path)


def preset_as_calibrated_now(data: FidelityData) -> DevicePreset:
    """The stored preset with the choices that calibrate makes from its raw record made again
    by today's rules (the copy engine's order, the bidirectional slowdowns checked against the
    pair of big copies) and the fitted figures it writes today (``FITTED_BY_CALIBRATE``, and
    the bands' model error; and the hardware
    queues' choices, where the raw record has the three-part probe of 2026-11-25), so that a
    measurement taken before a rule changed is judged as a calibration made today would be."""
    spread = {**data.preset.spread, **FITTED_MODEL_ERROR} if data.preset.spread else {}
    preset = replace(data.preset, spread=spread, **FITTED_BY_CALIBRATE)  # type: ignore[arg-type]
    timing = data.raw.get("timing")
    if isinstance(timing, dict):  # the timing fit's slowdowns, checked as calibrate does now
        checked, _ = cross_checked_bidirectional(timing, data.raw.get("bidirectional"))
        slowdowns = {k: v for k, v in checked.items() if k.startswith("bidirectional_slowdown")}
        preset = replace(preset, **slowdowns)
    queues = data.raw.get("hardware_queues")
    if isinstance(queues, dict) and "depth" in queues:  # the three-part probe of 2026-11-25
        preset = replace(preset, **queue_choices(queues, preset.connections or 8))
    probe = data.raw.get("copy_order")
    if not isinstance(probe, dict):
        return preset
    return replace(preset, copy_order=copy_order_of(probe))


def _without_paths(timeline: Timeline) -> Timeline:
    """The run's metadata less the measuring machine's file path of its preset."""
    calibration = timeline.meta.get("calibration")
    if isinstance(calibration, dict):
        calibration.pop("path", None)
    return timeline


def pack(folder: Path, out: Path) -> None:
    data = _from_folder(folder)
    for r in data.runs:
        _without_paths(r.timeline)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "host": data.host,
        "preset": data.preset.to_dict(),
        "raw": data.raw,
        "runs": [
            {
                "name": r.name,
                "seed": r.seed,
                "split": r.split,
                "run": run_to_dict(r.timeline, r.pipeline),
            }
            for r in data.runs
        ],
    }
    text = json.dumps(doc, separators=(",", ":"))
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as f:
        f.write(text)
    print(f"packed {len(data.runs)} runs into {out} ({out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "pack":
        raise SystemExit("usage: measurements.py pack DIR OUT.json.gz")
    pack(Path(sys.argv[2]), Path(sys.argv[3]))
