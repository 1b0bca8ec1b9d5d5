"""Headless command line: ``swimlanes COMMAND ...``. Each command lives in swimlanes.commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from swimlanes import __version__
from swimlanes.services.errors import CommandError

__all__ = ["CommandError", "build_parser", "main"]


#: The preset picked beside a measurement (swimlanes.gpu.preset_choice), in order; compare
#: warns when it falls back past the first.
_MEASURED_HOST_PRESET = (
    "the calibration of the host the measurement came from (cached here, or the shipped "
    "preset of the host it was calibrated on), else{warned} another host's calibration of "
    "that GPU, that GPU's shipped preset, or 'h200'"
)
#: --device's help per command: each says what that command simulates on when it is left out.
DEVICE_HELP = {
    "simulate": "device preset name or preset JSON file (default: the pipeline's device key, "
    "else 'h200')",
    "export": "device preset name or preset JSON file to simulate on (default: beside a "
    "measurement, --measured or a saved run as INPUT, "
    + _MEASURED_HOST_PRESET.format(warned="")
    + "; otherwise the pipeline's device key, else 'h200')",
    "compare": "device preset name or preset JSON file to simulate on (default: "
    + _MEASURED_HOST_PRESET.format(warned=", with a warning,")
    + "; when measuring now, a host with no calibration is calibrated first unless "
    "--no-calibrate, and naming a preset skips that)",
}


def _add_device(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--device", default=None, metavar="NAME", help=DEVICE_HELP[command])


def _add_no_calibrate(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-calibrate",
        action="store_true",
        help="do not calibrate this host first when the preset cache has no calibration of it",
    )


def _add_band(p: argparse.ArgumentParser, *, flag: bool) -> None:
    """Prediction band options (services/band_output.py): ``--band`` when ``flag``,
    ``--band-samples N`` and ``--seed S``."""
    if flag:
        p.add_argument(
            "--band", action="store_true", help="also predict a p10..p90 band by sampling"
        )
    p.add_argument(
        "--band-samples", type=int, metavar="N", help="band samples (default: by pipeline size)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="random seed of the band's samples: the same seed gives the same band (default: 0)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swimlanes",
        description="Design, simulate and measure CUDA stream pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"swimlanes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("gui", help="open the desktop app (the default)")
    p.add_argument("file", nargs="?", help="pipeline or measurement to open")

    p = sub.add_parser("simulate", help="simulate a pipeline and print its timeline")
    p.add_argument("file", help="pipeline file, or the name of a shipped example")
    _add_device(p, "simulate")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (times in us) instead of the table",
    )
    p.add_argument(
        "--insights", action="store_true", help="also explain the schedule and what to change"
    )
    _add_band(p, flag=True)

    p = sub.add_parser("export", help="export a timeline as PNG, SVG, PDF, trace JSON or CSV")
    p.add_argument(
        "input",
        help="pipeline (simulated here; or a shipped example's name), saved run, timeline or "
        "trace file",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="file to write; its extension picks the format: .png, .svg, .pdf, .json (Chrome "
        "trace) or .csv",
    )
    _add_device(p, "export")
    p.add_argument("--measured", metavar="RUN.json", help="a measured run to show beside it")
    p.add_argument(
        "--width",
        type=int,
        default=1600,
        metavar="PX",
        help="image width in pixels, 400 to 16000 (default: 1600; images only)",
    )
    p.add_argument(
        "--view",
        choices=("auto", "simulated", "measured", "both"),
        default="auto",
        help="which chart(s) an image shows (default: auto, every timeline there is: both "
        "when a measurement is given)",
    )

    p = sub.add_parser(
        "devices", help="list device presets (built in and calibrated on hosts) and their figures"
    )
    p.add_argument(
        "--json", action="store_true", help="print a JSON array of the presets instead of a table"
    )

    p = sub.add_parser("examples", help="list shipped example pipelines, or write one to a file")
    p.add_argument("name", nargs="?", help="the example to print or write (default: list them all)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the example to FILE, or to DIR/NAME.json when FILE is a folder "
        "(default: print it)",
    )

    p = sub.add_parser("stats", help="per-stream statistics of a trace or timeline")
    p.add_argument(
        "trace",
        help="Chrome or PyTorch trace, saved run or timeline file (gzipped or not)",
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON object (times in us) instead of text"
    )

    p = sub.add_parser(
        "critical-path",
        help="the chain of ops that set the makespan, and how much later each other op could end",
    )
    p.add_argument(
        "file",
        help="a pipeline (file or shipped example's name), simulated; or a saved run, timeline "
        "or trace, analysed as measured",
    )
    p.add_argument(
        "--device",
        help="preset to simulate a pipeline on (default: the pipeline's device key, else h200)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (path, share and per-op slack, times in us) instead of text",
    )

    p = sub.add_parser(
        "diff", help="two timelines side by side: the makespan delta and what changed per op"
    )
    for side in ("a", "b"):
        p.add_argument(
            side,
            metavar=side.upper(),
            help=f"side {side.upper()}: a pipeline (file or shipped example's name), simulated; "
            "or a saved run, timeline or trace, as measured",
        )
    p.add_argument(
        "--device",
        help="preset to simulate pipelines on (default: each one's device key, else h200)",
    )
    p.add_argument("--device-a", help="preset for side A only (default: --device)")
    p.add_argument("--device-b", help="preset for side B only (default: --device)")
    p.add_argument(
        "--match",
        choices=("auto", "index", "label", "stream"),
        default="auto",
        help="how ops pair up: program index, label, or k-th of a kind on a stream "
        "(default auto: index when the op kinds agree row for row, else label, else stream)",
    )
    p.add_argument("--top", type=int, default=15, help="ops that changed most to list (default 15)")
    p.add_argument(
        "--json", action="store_true", help="print one JSON object (times in us) instead of text"
    )

    p = sub.add_parser(
        "import-trace",
        help="rebuild a profiler trace, saved run or timeline as an editable pipeline",
    )
    p.add_argument(
        "trace", help="PyTorch (Kineto) or Chrome trace, saved run or timeline (gzipped or not)"
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="PIPELINE.json", help="the pipeline to write"
    )
    p.add_argument(
        "--run",
        metavar="RUN.json",
        help="also save the measurement, indexed to the pipeline's ops, for compare and the app",
    )
    p.add_argument(
        "--device",
        help="preset whose host call costs the replay assumes (default: the one compare would "
        "choose for the trace's GPU and host)",
    )

    p = sub.add_parser(
        "capture",
        help="run a Python program under CUPTI: its GPU work as a measured run and a pipeline",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="RUN.json",
        help="the measured run, with the rebuilt pipeline (default: PROGRAM.run.json)",
    )
    p.add_argument(
        "--pipeline", metavar="PIPELINE.json", help="also write the rebuilt pipeline alone"
    )
    p.add_argument(
        "--trace",
        metavar="TRACE.json.gz",
        help="where the raw trace goes, PyTorch profiler layout (default: PROGRAM.capture.json.gz)",
    )
    p.add_argument(
        "--range",
        metavar="NAME[:K]",
        help="keep only what the program did inside its region NAME (swimlanes.gpu.capture."
        "region), its K-th occurrence with :K (default: everything)",
    )
    p.add_argument(
        "--device",
        help="preset whose host call costs the rebuilt pipeline assumes (default: this host's)",
    )
    p.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        help="after --: the program and its arguments (python prog.py ARGS, python -m MOD ARGS "
        "or python -c CODE ARGS)",
    )

    p = sub.add_parser("run", help="run pipelines on the GPU and print the measured timelines")
    p.add_argument(
        "file",
        nargs="+",
        help="one or more pipelines (files or shipped examples' names), run one after another",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=5,
        metavar="N",
        help="timed repetitions: the times shown are those of the one with the median device "
        "span, the spread is p10..p90 over all of them (default: 5)",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        metavar="N",
        help="untimed repetitions first, to compile kernels and warm caches (default: 1)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "cupti", "events"),
        default="auto",
        help="how ops are timed: CUPTI activity records or CUDA events (default: auto, CUPTI "
        "where it loads, else events)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per pipeline (times in us) instead of the table",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="RUN.json",
        help="save the measured run with its pipeline, for compare --measured and the app",
    )
    p.add_argument(
        "--out-dir", metavar="DIR", help="save each measured run as DIR/<pipeline>.run.json"
    )
    _add_no_calibrate(p)

    p = sub.add_parser("compare", help="run and simulate a pipeline and report the errors")
    p.add_argument("file", help="pipeline file, or the name of a shipped example")
    _add_device(p, "compare")
    p.add_argument(
        "--repeat",
        type=int,
        default=5,
        metavar="N",
        help="timed repetitions on the GPU; the one with the median device span is compared "
        "(default: 5)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "cupti", "events"),
        default="auto",
        help="how ops are timed: CUPTI activity records or CUDA events (default: auto, CUPTI "
        "where it loads, else events)",
    )
    p.add_argument(
        "--measured",
        metavar="RUN.json",
        help="compare with a saved run instead of running now (default without a GPU: the "
        "shipped measurement of a shipped example)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (times and errors in us) instead of the report",
    )
    _add_band(p, flag=False)
    _add_no_calibrate(p)

    p = sub.add_parser(
        "calibrate", help="measure this GPU, write a device preset and cache it for this host"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="PRESET.json",
        help="where to write the preset (default: <device>-calibrated.json in this folder)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="fewer sizes and repetitions, and a 20 s limit on the optional probes",
    )
    p.add_argument("--raw", metavar="RAW.json", help="also save the raw measurements to RAW.json")
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="skip the optional probes once this many seconds have passed (built-in figures "
        "stand in; default 20 with --quick, no limit otherwise)",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="do not store the preset in this host's cache"
    )
    p.add_argument(
        "--links",
        action="store_true",
        help="measure only the links between this machine's GPUs and NCCL's collectives, into "
        "this host's cached preset (done after the rest anyway where there are 2 GPUs or more)",
    )
    p.add_argument(
        "--no-links", action="store_true", help="do not measure links, even with several GPUs"
    )

    p = sub.add_parser(
        "schema", help="print the JSON Schema of a file format (for editors and validators)"
    )
    p.add_argument(
        "format",
        nargs="?",
        choices=("pipeline", "run", "timeline"),
        default="pipeline",
        help="which file format: a pipeline, a saved measured run, or a timeline "
        "(default: pipeline)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE instead of printing")

    p = sub.add_parser("codegen", help="generate runnable Numba CUDA or CUDA C++ code")
    p.add_argument("file", help="pipeline file, or the name of a shipped example")
    p.add_argument(
        "--lang",
        choices=("python", "cuda"),
        required=True,
        help="python: a Numba CUDA script; cuda: a CUDA C++ program",
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the source file to write")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swimlanes`` console script."""
    from swimlanes.model.validate import PipelineError

    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command or "gui"
    if command == "gui" and not hasattr(args, "file"):
        args.file = None
    module = importlib.import_module(f"swimlanes.commands.{command.replace('-', '_')}")
    try:
        return int(module.run(args) or 0)
    except PipelineError as err:
        for problem in err.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except CommandError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as err:  # a file the system refuses (name too long ...) wherever it is met
        name = str(err.filename or "")
        if len(name) > 80:
            name = f"{name[:60]}... ({len(name)} characters)"
        print(f"error: {err.strerror or err}" + (f": {name}" if name else ""), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
