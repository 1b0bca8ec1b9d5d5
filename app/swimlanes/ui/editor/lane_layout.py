"""Where each lane of the lane editor is (no Qt): one lane per stream plus the host thread,
and, in a pipeline of several devices, the lanes grouped per device under a device header
(the device's host thread first, then its streams); a collapsed device shows its header only.
A program with several host threads on a device has one host lane per thread, grouped so too.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from swimlanes.model.document import STREAM_OPS, Op, Pipeline, Stream

LANE_H = 50.0
#: A device's header row: thinner than a lane, it holds no ops.
DEVICE_H = 26.0
TOP = 22.0
#: Lane key of the host thread's lane (host ops take no stream) in a single-device pipeline.
HOST_LANE = ""
# Stream names are user text; these keys start with a NUL, which no stream name holds.
_HOST_PREFIX = "\0host:"
_DEVICE_PREFIX = "\0device:"
_THREAD_PREFIX = "\0thread:"


def host_lane(device: str | None = None) -> str:
    """The key of a host thread's lane: the one host lane, or ``device``'s host thread."""
    return HOST_LANE if device is None else _HOST_PREFIX + device


def thread_lane(thread: str, device: str) -> str:
    """The key of a host thread's lane (a device's own thread, named after it: its host lane)."""
    return host_lane(device) if thread == device else _THREAD_PREFIX + thread


def lane_thread(key: str) -> str | None:
    """The declared host thread of a thread's lane key (None otherwise)."""
    return key[len(_THREAD_PREFIX) :] if key.startswith(_THREAD_PREFIX) else None


def op_lane(pipeline: Pipeline, op: Op) -> str:
    """The lane an op's block is in: its stream's, or its host thread's for host-only calls."""
    if op.op in STREAM_OPS:
        return op.stream_name or ""
    if pipeline.is_multi_thread:
        return thread_lane(pipeline.op_thread(op), pipeline.op_device(op))
    return host_lane(pipeline.op_device(op)) if pipeline.is_multi_device else HOST_LANE


def device_lane(device: str) -> str:
    """The key of a device's header row."""
    return _DEVICE_PREFIX + device


def is_host_lane(key: str) -> bool:
    return key == HOST_LANE or key.startswith(_HOST_PREFIX) or key.startswith(_THREAD_PREFIX)


def is_device_lane(key: str) -> bool:
    return key.startswith(_DEVICE_PREFIX)


def is_stream_lane(key: str) -> bool:
    return not (is_host_lane(key) or is_device_lane(key))


def lane_device(key: str) -> str | None:
    """The device named by a host-thread lane or device header key (None otherwise)."""
    for prefix in (_HOST_PREFIX, _DEVICE_PREFIX):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return None


def lane_owner(pipeline: Pipeline, key: str) -> tuple[str | None, str | None]:
    """Whose host work a host lane holds, as (device, thread): a device's host lane in a program
    of one thread per device gives its device; a thread's lane in a program of several threads
    gives the thread (a device's own thread is named after it); other lanes give neither."""
    if not is_host_lane(key):
        return None, None
    thread, device = lane_thread(key), lane_device(key)
    if thread is None and device is not None and pipeline.is_multi_thread:
        return None, device
    return device, thread


@dataclass
class LaneLayout:
    """Lane keys top to bottom with their scene y and height, and the stream of each lane."""

    keys: list[str] = field(default_factory=list)
    tops: list[float] = field(default_factory=list)
    heights: list[float] = field(default_factory=list)
    streams: dict[str, Stream] = field(default_factory=dict)
    #: Devices whose lanes are hidden under their header.
    collapsed: frozenset[str] = frozenset()

    @property
    def bottom(self) -> float:
        return self.tops[-1] + self.heights[-1] if self.keys else TOP

    def y(self, key: str) -> float:
        return self.tops[self.keys.index(key)]

    def height(self, key: str) -> float:
        return self.heights[self.keys.index(key)]

    def at(self, scene_y: float) -> str:
        """The lane at ``scene_y`` (the first or last lane beyond the ends)."""
        i = bisect.bisect_right(self.tops, scene_y) - 1
        return self.keys[max(0, min(i, len(self.keys) - 1))]


def lane_layout(
    pipeline: Pipeline, collapsed: set[str] | frozenset[str] = frozenset()
) -> LaneLayout:
    """The lanes of ``pipeline``; ``collapsed`` names devices shown as their header only."""
    out = LaneLayout(collapsed=frozenset(collapsed))
    streams = pipeline.all_streams

    def add(key: str, height: float, stream: Stream | None = None) -> None:
        out.tops.append(out.bottom if out.keys else TOP)
        out.keys.append(key)
        out.heights.append(height)
        if stream is not None:
            out.streams[key] = stream

    if not (pipeline.is_multi_device or pipeline.is_multi_thread):
        add(HOST_LANE, LANE_H)
        for s in streams:
            add(s.name, LANE_H, s)
        return out
    devices = pipeline.device_names
    # a stream of an undeclared device (the validator refuses it) shows under the first one
    home = {
        s.name: d if (d := pipeline.stream_device(s.name)) in devices else devices[0]
        for s in streams
    }
    for device in devices:
        add(device_lane(device), DEVICE_H)
        if device in collapsed:
            continue
        for thread, home_device in pipeline.thread_list():
            if home_device == device:
                add(thread_lane(thread, device), LANE_H)
        for s in streams:
            if home[s.name] == device:
                add(s.name, LANE_H, s)
    return out
