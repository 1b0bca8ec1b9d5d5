"""What the editor's views share: drag-and-drop and clipboard formats, units, descriptions."""

from __future__ import annotations

import html
import json
from typing import Any

from swimlanes.model.document import (
    COLLECTIVE_OPS,
    CUDA_CALLS,
    DEFAULT_STREAM,
    FORMAT_NAME,
    FORMAT_VERSION,
    STREAM_OPS,
    Op,
    Pipeline,
)
from swimlanes.model.edits import EditError
from swimlanes.model.io import parse_json
from swimlanes.model.op_kinds import PALETTE_ORDER, REGISTRY, op_kind
from swimlanes.model.validate import PipelineError, pipeline_from_dict

#: Drag from the palette: the payload is the op kind (ASCII).
OP_MIME = "application/x-swimlanes-op"
#: Copy/paste and drags between views: a JSON object {"format": ..., "ops": [op dicts]}.
OPS_MIME = "application/x-swimlanes-ops"
OPS_CLIPBOARD_FORMAT = "swimlanes-ops"

#: Palette order (the registry's: data movement, compute, ordering, host, multi-device).
PALETTE_KINDS: tuple[str, ...] = PALETTE_ORDER

#: What each kind does, for tooltips and the inspector (from the op-kind registry).
OP_HELP: dict[str, str] = {k.name: k.help for k in REGISTRY}


def new_op_refusal(kind: str, pipeline: Pipeline) -> str:
    """Why a new ``kind`` op cannot be added to ``pipeline`` yet ("" when it can): a
    collective needs a communicator to run on."""
    if kind in COLLECTIVE_OPS and not pipeline.communicators:
        title = op_kind(kind).title.lower()
        article = "an" if title[0] in "aeiou" else "a"
        return (
            f"{article} {title} runs across the devices of a communicator: declare one in "
            "Pipeline > Devices and communicators first"
        )
    return ""


def op_tooltip(kind: str) -> str:
    """Rich-text tooltip: the CUDA call and what it does."""
    return f"<b>{html.escape(CUDA_CALLS[kind])}</b><br>{html.escape(OP_HELP[kind])}"


def format_us(us: float) -> str:
    """370 us, 1.5 ms, 2 s."""
    if us >= 1e6:
        return f"{us / 1e6:.4g} s"
    if us >= 1e3:
        return f"{us / 1e3:.4g} ms"
    return f"{us:.4g} us"


def ops_to_json(ops: list[Op]) -> str:
    return json.dumps({"format": OPS_CLIPBOARD_FORMAT, "ops": [op.to_dict() for op in ops]})


def ops_from_json(text: str, pipeline: Pipeline, stream: str | None) -> list[Op]:
    """Ops from clipboard JSON, validated, with fresh uids.

    An op whose stream the document does not have goes to ``stream`` (the lane pasted on).
    """
    try:
        data: Any = parse_json(text)  # the pipeline files' limits: depth, 64-bit integers
    except (PipelineError, TypeError):
        raise EditError("the clipboard holds no Swimlanes ops") from None
    if not isinstance(data, dict) or data.get("format") != OPS_CLIPBOARD_FORMAT:
        raise EditError("the clipboard holds no Swimlanes ops")
    raw_ops = data.get("ops")
    if not isinstance(raw_ops, list) or not raw_ops:
        raise EditError("the clipboard holds no Swimlanes ops")
    names = {s.name for s in pipeline.all_streams}
    fixed = []
    for raw in raw_ops:
        if not isinstance(raw, dict):
            raise EditError("the clipboard's ops are not valid")
        raw = dict(raw)
        if raw.get("op") in STREAM_OPS and raw.get("stream", DEFAULT_STREAM) not in names:
            raw["stream"] = stream
            if stream in (None, DEFAULT_STREAM):
                raw.pop("stream")
        fixed.append(raw)
    doc = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "streams": [s.to_dict() for s in pipeline.streams],
        "program": fixed,
    }
    try:
        return pipeline_from_dict(doc).program
    except PipelineError as err:
        raise EditError(f"the clipboard's ops are not valid: {err}") from None
