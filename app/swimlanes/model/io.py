"""Reading and writing pipeline files (JSON). Saving is atomic: temp file, then rename."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

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


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` so that ``path`` holds either the old or the whole new content."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    try:
        # mkstemp makes the file private (0600); keep the old file's mode, or the usual one.
        try:
            mode = p.stat().st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_pipeline(pipeline: Pipeline, path: str | os.PathLike[str]) -> None:
    """Save atomically."""
    write_text_atomic(path, pipeline_to_json(pipeline))


def dump_json_atomic(data: Any, path: str | os.PathLike[str]) -> None:
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")
