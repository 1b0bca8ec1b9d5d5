"""``swimlanes export INPUT -o OUT``: a timeline as PNG, SVG, PDF, Chrome trace JSON or CSV.

INPUT is a pipeline (simulated here) or a measurement/trace; ``--measured`` adds a measured
run. OUT's extension picks the format. Images need no display (Qt runs offscreen).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from swimlanes.model.document import Pipeline
from swimlanes.resources import pipeline_argument
from swimlanes.services.devices import simulation_device
from swimlanes.services.errors import CommandError
from swimlanes.services.runs import is_pipeline_file, load_trace
from swimlanes.services.simulation import simulate_file, simulate_pipeline
from swimlanes.timeline.timeline import Timeline

IMAGE_FORMATS = (".png", ".svg", ".pdf")
DATA_FORMATS = (".json", ".csv")
FORMATS = IMAGE_FORMATS + DATA_FORMATS


def load_inputs(
    args: argparse.Namespace,
) -> tuple[Timeline | None, Timeline | None, str, Pipeline | None]:
    """(simulated, measured, title, pipeline if known) from INPUT and ``--measured``."""
    path = pipeline_argument(args.input)
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    simulated = measured = None
    pipeline: Pipeline | None  # known for a pipeline file, maybe for a trace
    extra = load_trace(Path(args.measured))[0] if args.measured else None
    # Beside a measurement, simulate on the measured GPU's preset unless --device says otherwise.
    device = args.device or (simulation_device(None, extra) if extra is not None else None)
    if is_pipeline_file(path):
        pipeline, simulated = simulate_file(path, device)
        title = pipeline.name
    else:
        tl, pipeline = load_trace(path)
        title = (pipeline.name if pipeline is not None else "") or tl.name or path.stem
        if tl.source == "measured":
            if extra is not None:
                raise CommandError(
                    f"{path.name} is already a measurement; --measured adds a second"
                )
            measured = tl
            if pipeline is not None and args.view != "measured":
                device = args.device or simulation_device(None, tl)
                simulated = simulate_pipeline(pipeline, device)
        else:
            simulated = tl
    return simulated, measured if extra is None else extra, title, pipeline


def choose_view(
    view: str, simulated: Timeline | None, measured: Timeline | None
) -> tuple[Timeline | None, Timeline | None]:
    """The timelines ``--view`` asks for; a missing one is a clear error."""
    if view == "auto":
        return simulated, measured
    if view in ("simulated", "both") and simulated is None:
        raise CommandError(f"--view {view} needs a pipeline to simulate (INPUT is a measurement)")
    if view in ("measured", "both") and measured is None:
        raise CommandError(f"--view {view} needs a measured run: pass --measured RUN.json")
    if view == "simulated":
        return simulated, None
    if view == "measured":
        return None, measured
    return simulated, measured


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise CommandError(
            f"cannot export to '{suffix or out.name}': use one of {', '.join(FORMATS)}"
        )
    if not out.parent.is_dir():
        raise CommandError(f"no such folder: {out.parent}")
    if out.is_dir():
        raise CommandError(f"cannot write {out}: it is a folder")
    if suffix in IMAGE_FORMATS and not 400 <= args.width <= 16000:
        raise CommandError(f"--width {args.width}: use 400 to 16000 pixels")
    sim_all, meas_all, title, pipeline = load_inputs(args)
    simulated, measured = choose_view(args.view, sim_all, meas_all)
    timelines = [tl for tl in (simulated, measured) if tl is not None]
    if suffix in IMAGE_FORMATS:
        from swimlanes.ui.export_image import export_image
        from swimlanes.ui.gantt.rows import stream_info_of

        stream_info = stream_info_of(pipeline) if pipeline is not None else None

        try:
            export_image(
                out, simulated, measured, width=args.width, title=title, stream_info=stream_info
            )
        except OSError as err:
            raise _write_error(out, err) from None
        except ValueError as err:
            raise CommandError(str(err)) from None
        what = " and ".join(tl.source for tl in timelines)
        print(
            f"wrote {out} ({suffix[1:].upper()}, {what} chart{'s' if len(timelines) > 1 else ''})"
        )
        return 0
    try:
        if suffix == ".json":
            from swimlanes.timeline.formats.chrome_trace import write_chrome_trace

            write_chrome_trace(timelines, out)
        else:
            from swimlanes.timeline.formats.csv_export import write_op_csv

            write_op_csv(timelines, out)
    except (OSError, ValueError) as err:
        raise _write_error(out, err) from None
    n = sum(len(tl) for tl in timelines)
    print(f"wrote {out} ({suffix[1:].upper()}, {len(timelines)} timeline(s), {n} ops)")
    return 0


def _write_error(out: Path, err: OSError | ValueError) -> CommandError:
    """``cannot write OUT: why``; the writers leave a file already at OUT as it was."""
    why = (err.strerror if isinstance(err, OSError) else None) or str(err)
    return CommandError(f"cannot write {out}: {why}; nothing was written")
