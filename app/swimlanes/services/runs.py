"""Loading measured runs and traces for the command line: the shipped measurement of an
example, a saved run, any timeline-like file, and telling a pipeline file from the rest.
Unreadable files become a :class:`CommandError` that names them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from swimlanes.model.document import Pipeline
from swimlanes.resources import measurements_dir
from swimlanes.services.errors import CommandError
from swimlanes.timeline.formats.io import load_run, load_timeline_any
from swimlanes.timeline.formats.trace_import import TraceError
from swimlanes.timeline.timeline import Timeline

PIPELINE_FORMAT = "swimlanes-pipeline"


def shipped_measurement(pipeline_path: str | Path) -> Path | None:
    """The shipped H200 run of an example (``resources/measurements/<name>.h200.json``)."""
    path = measurements_dir() / f"{Path(pipeline_path).stem}.h200.json"
    return path if path.is_file() else None


def load_measurement(path: str | Path) -> Timeline:
    """The measured timeline of a saved run."""
    try:
        timeline, _ = load_run(path)
    except (OSError, ValueError) as err:
        raise CommandError(f"cannot read the measurement {path}: {err}") from None
    return timeline


def load_trace(path: Path) -> tuple[Timeline, Pipeline | None]:
    """A run, timeline or trace file's timeline (and the pipeline a run holds)."""
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    try:
        return load_timeline_any(path)
    except (TraceError, ValueError, OSError, gzip.BadGzipFile) as err:
        raise CommandError(f"cannot open {path.name}: {err}") from None


def is_pipeline_file(path: Path) -> bool:
    """Whether ``path`` holds a pipeline (rather than a run or trace), from its first bytes."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError as err:
        raise CommandError(f"cannot read {path}: {err.strerror or err}") from None
    if head[:2] == b"\x1f\x8b":  # gzip: only traces are gzipped
        return False
    text = head.decode("utf-8", errors="replace").replace(" ", "").replace("\n", "")
    at = text.find('"format":"')
    if at >= 0:  # the first format key is the document's (a run embeds its pipeline later)
        return text[at + 10 :].startswith(f'{PIPELINE_FORMAT}"')
    if '"traceEvents"' in text:
        return False
    # an unlabelled document: a pipeline has a program, a trace has events
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and "program" in data
