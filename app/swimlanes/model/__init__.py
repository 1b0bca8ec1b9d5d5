"""The pipeline document: streams, ops, validation, versioned JSON and undo-able edits."""

from swimlanes.model.document import (
    DEFAULT_STREAM,
    OP_KINDS,
    STREAM_KINDS,
    Op,
    Pipeline,
    Stream,
)
from swimlanes.model.io import load_pipeline, pipeline_from_json, pipeline_to_json, save_pipeline
from swimlanes.model.validate import PipelineError, Problem, pipeline_from_dict, validate

__all__ = [
    "DEFAULT_STREAM",
    "OP_KINDS",
    "STREAM_KINDS",
    "Op",
    "Pipeline",
    "PipelineError",
    "Problem",
    "Stream",
    "load_pipeline",
    "pipeline_from_dict",
    "pipeline_from_json",
    "pipeline_to_json",
    "save_pipeline",
    "validate",
]
