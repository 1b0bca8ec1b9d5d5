"""Validation of pipeline documents: every problem is reported with its JSON path.

Besides the shape of each key, the validator enforces the limits in
:mod:`swimlanes.model.document` (``MAX_OPS``, ``MAX_DURATION_US``, ``MAX_BYTES`` ...): what the
simulator can represent. Each refusal names the limit. Every check is linear in the size of the
document (no pass over the streams per stream, no pass over the program per op).

The document's parts are checked in order: the top level, the devices and communicators
(:mod:`swimlanes.model.validate_devices`), the streams, each op
(:mod:`swimlanes.model.validate_ops`), and last the collectives across devices.
"""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import (
    DEFAULT_STREAM,
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_DEVICE_CHARS,
    MAX_NAME_CHARS,
    MAX_OPS,
    MAX_PRIORITY,
    MAX_STREAMS,
    MAX_TEXT_CHARS,
    MAX_THREADS_PER_BLOCK,
    MIN_PRIORITY,
    STREAM_KINDS,
    Pipeline,
    Stream,
)
from swimlanes.model.validate_checks import (
    MAX_PROBLEMS,
    Checker,
    HugeInt,
    PipelineError,
    Problem,
    gc_paused,
    got,
    is_int,
    short,
)
from swimlanes.model.validate_devices import (
    Scope,
    check_collectives,
    parse_communicators,
    parse_devices,
    scope_of,
    stream_device,
)
from swimlanes.model.validate_ops import parse_ops
from swimlanes.model.validate_threads import (
    host_threads_of,
    parse_host_threads,
    register_stream_thread,
    stream_host_thread,
)

__all__ = [
    "MAX_THREADS_PER_BLOCK",
    "MAX_PROBLEMS",
    "HugeInt",
    "PipelineError",
    "Problem",
    "pipeline_from_dict",
    "validate",
]

#: Documented top-level keys that are kept in ``Pipeline.extra``, with their longest text.
_TEXT_KEYS = {"description": MAX_TEXT_CHARS, "lesson": MAX_TEXT_CHARS, "device": MAX_DEVICE_CHARS}
#: Top-level keys the Pipeline holds in its own fields.
_KNOWN = {
    "format", "version", "name", "streams", "program", "devices", "communicators", "host_threads",
}  # fmt: skip


def _priority(c: Checker, raw: dict, path: str) -> int | None:
    priority = raw.get("priority", 0)
    if isinstance(priority, HugeInt) or (
        is_int(priority) and not MIN_PRIORITY <= priority <= MAX_PRIORITY
    ):
        c.add(
            f"{path}.priority",
            f"must be from {MIN_PRIORITY} to {MAX_PRIORITY} (a C int; {got(priority)})",
        )
        return None
    if not is_int(priority):
        c.add(f"{path}.priority", "must be an integer (lower is higher priority)")
        return None
    return priority


_STREAM_KEYS = ("name", "kind", "priority", "device", "host_thread")


def _parse_stream(c: Checker, raw: Any, path: str, scope: Scope) -> Stream | None:
    if not isinstance(raw, dict):
        c.add(path, "must be an object")
        return None
    before = len(c.problems)
    name = c.string(raw, "name", path, required=True)
    kind = raw.get("kind", "blocking")
    if not isinstance(kind, str) or kind not in STREAM_KINDS:
        c.add(f"{path}.kind", f"must be one of {', '.join(STREAM_KINDS)} (got {short(kind)})")
        kind = None
    priority = _priority(c, raw, path)
    device_ok, device = stream_device(c, raw, path, scope)
    # The legacy default stream named 'default' is the first device's; another device's legacy
    # default stream takes another name (stream names are unique across devices).
    on_first = device in (None, scope.first_device)
    if name == DEFAULT_STREAM and kind not in (None, "legacy_default"):
        c.add(f"{path}.name", "'default' is the legacy default stream's name")
    elif name == DEFAULT_STREAM and device_ok and not on_first:
        c.add(
            f"{path}.device",
            f"'default' is the legacy default stream of the first device, "
            f"{scope.first_device}: name {device}'s legacy default stream otherwise",
        )
    if kind == "legacy_default" and name not in (None, DEFAULT_STREAM) and on_first:
        c.add(f"{path}.kind", "the legacy default stream must be named 'default'")
    _, thread = stream_host_thread(c, raw, path, scope, kind, device if device_ok else None)
    extra = {k: v for k, v in raw.items() if k not in _STREAM_KEYS}
    if extra:
        c.json_values(extra, path)
    if name is None or kind is None or priority is None or len(c.problems) != before:
        return None
    return Stream(name, kind, priority, device, extra, host_thread=thread)


def _parse_streams(c: Checker, raw_streams: list, scope: Scope | None = None) -> list[Stream]:
    """The declared streams; each valid one's device is recorded in ``scope``."""
    scope = scope or scope_of([])
    streams: list[Stream] = []
    seen: set[str] = set()  # linear: one set lookup per stream
    legacy: dict[str, str] = {}  # device -> its declared legacy default stream
    for i, raw in enumerate(raw_streams):
        s = _parse_stream(c, raw, f"streams[{i}]", scope)
        if s is None:
            # Refused, but its name is still the one the program's ops use: they are not
            # reported again as naming an undeclared stream (the stream's problem is the one).
            name = raw.get("name") if isinstance(raw, dict) else None
            if isinstance(name, str) and name:
                scope.stream_device.setdefault(name, scope.first_device)
            continue
        if s.name in seen:
            c.add(f"streams[{i}].name", f"duplicate stream name {short(s.name)}")
            continue
        device = s.device or scope.first_device
        if s.kind == "legacy_default" and s.name != DEFAULT_STREAM:
            if device in legacy:
                c.add(
                    f"streams[{i}].kind",
                    f"{device} already has a legacy default stream ({short(legacy[device])})",
                )
                continue
            legacy[device] = s.name
        seen.add(s.name)
        scope.stream_device[s.name] = device
        register_stream_thread(c, f"streams[{i}]", s.name, s.kind, device, s.host_thread, scope)
        streams.append(s)
    return streams


def _top_level(c: Checker, data: dict) -> tuple[Any, list, list]:
    """The name, streams and program of ``data``, with their problems reported."""
    name = data.get("name", "untitled")
    if not isinstance(name, str):
        c.add("name", "must be a string")
    elif len(name) > MAX_NAME_CHARS:
        c.add("name", f"must be at most {MAX_NAME_CHARS} characters (got {len(name)})")
    for key, longest in _TEXT_KEYS.items():
        if key not in data:
            continue
        v = data[key]
        if not isinstance(v, str):
            c.add(key, "must be a string")
        elif len(v) > longest:
            c.add(key, f"must be at most {longest} characters (got {len(v)})")
    raw_streams = data.get("streams", [])
    if not isinstance(raw_streams, list):
        c.add("streams", "must be a list")
        raw_streams = []
    raw_program = data.get("program")
    if not isinstance(raw_program, list):
        c.add("program", "is required (a list of ops)")
        raw_program = []
    return name, raw_streams, raw_program


def _check_format(c: Checker, data: Any) -> None:
    if not isinstance(data, dict):
        raise PipelineError([Problem("", "a pipeline file must hold a JSON object")])
    if data.get("format") != FORMAT_NAME:
        c.add("format", f"must be {FORMAT_NAME!r} (got {short(data.get('format'))})")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise PipelineError(
            c.problems
            + [
                Problem(
                    "version",
                    f"unsupported version {short(version)}: this Swimlanes reads version "
                    f"{FORMAT_VERSION}",
                )
            ]
        )


def pipeline_from_dict(data: Any, *, match_collectives: bool = True) -> Pipeline:
    """Build a :class:`Pipeline` from parsed JSON, or raise :class:`PipelineError`.

    ``match_collectives=False`` leaves out the check that every member of a communicator makes
    the same collective calls: for checking some ops of a document on their own."""
    c = Checker()
    _check_format(c, data)
    name, raw_streams, raw_program = _top_level(c, data)
    # Too many streams or ops: refused before any per-item work (and only that is reported:
    # the items' own problems would be drowned by it).
    if len(raw_streams) > MAX_STREAMS:
        c.add("streams", f"{len(raw_streams)} streams: at most {MAX_STREAMS}")
    if len(raw_program) > MAX_OPS:
        c.add("program", f"{len(raw_program)} ops: at most {MAX_OPS}")
    if len(raw_streams) > MAX_STREAMS or len(raw_program) > MAX_OPS:
        raise PipelineError(c.problems)
    devices = parse_devices(c, data)
    scope = scope_of(devices)
    communicators = parse_communicators(c, data, scope.devices)
    scope.communicators = {comm.name: comm.devices for comm in communicators}
    parse_host_threads(c, data, scope)
    streams = _parse_streams(c, raw_streams, scope)
    with gc_paused():
        program = parse_ops(c, raw_program, scope)
    extra = {k: v for k, v in data.items() if k not in _KNOWN}
    unknown = {k: v for k, v in extra.items() if k not in _TEXT_KEYS}
    if unknown:
        c.json_values(unknown, "")
    if c.problems:
        raise PipelineError(c.problems)
    pipeline = Pipeline(
        name=name,
        streams=streams,
        program=[op for op in program if op is not None],
        devices=devices,
        communicators=communicators,
        extra=extra,
        host_threads=host_threads_of(data, scope),
    )
    # Last, and only for an otherwise valid document: a refused op would make its
    # communicator's calls look unmatched.
    if match_collectives:
        check_collectives(c, pipeline)
    if c.problems:
        raise PipelineError(c.problems)
    return pipeline


def validate(pipeline: Pipeline) -> list[Problem]:
    """Problems with an in-memory pipeline (after edits), by re-checking its JSON form."""
    try:
        pipeline_from_dict(pipeline.to_dict())
    except PipelineError as err:
        return err.problems
    return []
