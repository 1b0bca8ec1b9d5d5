"""Reading and writing pipeline files (JSON). Saving is atomic: temp file, then rename."""

from __future__ import annotations

import json
import os
from pathlib import Path

# The atomic writers live in atomic_write; imported from here by callers that predate it.
from swimlanes.model.atomic_write import dump_json_atomic as dump_json_atomic
from swimlanes.model.atomic_write import write_text_atomic as write_text_atomic
from swimlanes.model.document import Pipeline
from swimlanes.model.validate import PipelineError, Problem, pipeline_from_dict

MAX_PIPELINE_FILE_BYTES = 256 * 1024 * 1024


def pipeline_from_json(text: str) -> Pipeline:
    """Parse JSON text into a validated :class:`Pipeline`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise PipelineError(
            [Problem("", f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}")]
        ) from None
    return pipeline_from_dict(data)


def load_pipeline(path: str | os.PathLike[str]) -> Pipeline:
    """Load and validate a pipeline file; every problem comes back in a :class:`PipelineError`."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_PIPELINE_FILE_BYTES:
            raise PipelineError(
                [Problem("", f"{p.name} is {size} bytes: too large for a pipeline")]
            )
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PipelineError([Problem("", f"no such file: {p}")]) from None
    except (OSError, UnicodeDecodeError) as err:
        raise PipelineError([Problem("", f"cannot read {p}: {err}")]) from None
    return pipeline_from_json(text)


def pipeline_to_json(pipeline: Pipeline) -> str:
    return json.dumps(pipeline.to_dict(), indent=2) + "\n"


def save_pipeline(pipeline: Pipeline, path: str | os.PathLike[str]) -> None:
    """Save atomically."""
    write_text_atomic(path, pipeline_to_json(pipeline))

