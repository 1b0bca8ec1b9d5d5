"""What both code generators share: safe identifiers, safe comments and the buffer plan.

Nothing from the document reaches generated code except through this module: names become
``[A-Za-z0-9_]`` identifiers, free text becomes single-line comments with comment terminators
broken, and numbers are re-formatted from validated ints and floats. A pipeline file therefore
cannot inject code into what is generated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from swimlanes.model.document import DEFAULT_STREAM, Pipeline, Stream

_IDENT_BAD = re.compile(r"[^A-Za-z0-9_]")


def identifier(text: str, prefix: str) -> str:
    """A C and Python identifier derived from ``text`` (never a keyword: always prefixed)."""
    core = _IDENT_BAD.sub("_", text)[:40].strip("_") or "x"
    return f"{prefix}_{core}"


def comment_text(text: str) -> str:
    """Free text made safe for a single-line ``#`` or ``//`` comment in either language."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    # Break block-comment terminators and line continuations (a trailing backslash would
    # swallow the next line in C).
    flat = flat.replace("*/", "* /").replace("/*", "/ *").replace("\\", "/")
    return flat[:120]


@dataclass
class BufferPlan:
    """Host and device buffers, one per distinct (memory kind, size), shared by the ops."""

    device: dict[int, str] = field(default_factory=dict)
    pinned: dict[int, str] = field(default_factory=dict)
    pageable: dict[int, str] = field(default_factory=dict)

    def device_buffer(self, nbytes: int) -> str:
        return self.device.setdefault(nbytes, f"d_buf{len(self.device)}")

    def host_buffer(self, nbytes: int, memory: str) -> str:
        table = self.pinned if memory == "pinned" else self.pageable
        prefix = "h_pinned" if memory == "pinned" else "h_pageable"
        return table.setdefault(nbytes, f"{prefix}{len(table)}")


@dataclass
class CodePlan:
    """Identifiers for streams and events, and the buffers, for one pipeline."""

    pipeline: Pipeline
    stream_ids: dict[str, str] = field(default_factory=dict)
    event_ids: dict[str, str] = field(default_factory=dict)
    buffers: BufferPlan = field(default_factory=BufferPlan)
    # src buffer of each d2d copy (a second device buffer of the same size)
    d2d_sources: dict[int, str] = field(default_factory=dict)

    @property
    def streams(self) -> list[Stream]:
        return self.pipeline.all_streams

    def stream_id(self, name: str | None) -> str:
        return self.stream_ids[name or DEFAULT_STREAM]


def _unique(ids: dict[str, str], name: str, prefix: str) -> str:
    base = identifier(name, prefix)
    candidate, n = base, 1
    while candidate in ids.values():
        n += 1
        candidate = f"{base}_{n}"
    ids[name] = candidate
    return candidate


def make_plan(pipeline: Pipeline) -> CodePlan:
    """Name every stream, event and buffer the generated program needs."""
    plan = CodePlan(pipeline)
    for s in pipeline.all_streams:
        _unique(plan.stream_ids, s.name, "stream")
    for ev in pipeline.events():
        _unique(plan.event_ids, ev, "event")
    for i, op in enumerate(pipeline.program):
        if op.op in ("h2d", "d2h"):
            plan.buffers.device_buffer(op.bytes or 1)
            plan.buffers.host_buffer(op.bytes or 1, op.effective_host_memory)
        elif op.op in ("memset", "d2d") or (op.op == "kernel" and op.bytes):
            plan.buffers.device_buffer(op.bytes or 1)
        if op.op == "d2d":
            plan.d2d_sources[i] = f"d_src{i}"
    return plan
