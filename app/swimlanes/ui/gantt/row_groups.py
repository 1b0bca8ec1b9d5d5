"""Row groups of a Gantt chart: host, streams, engines (or, for several devices, one group per
device and one of the links between them); collapsed groups and pinned rows.

Qt-free: the chart turns its full row list and a :class:`RowGrouping` into the rows shown
with :func:`arrange_rows`, and :func:`swimlanes.ui.gantt.rows.build_rows` draws a collapsed
group's member bars on its one summary row (``merge``). The simulated and the measured chart
share one grouping, so they keep the same rows in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from swimlanes.ui.gantt.row_keys import COMPUTE_ROW, HOST_ROW, is_link_row, row_device

#: Groups in the order they are shown, with their titles.
GROUPS: tuple[str, ...] = ("host", "streams", "engines")
GROUP_TITLE = {
    "host": "Host",
    "streams": "Streams",
    "engines": "Engines",
    "pinned": "Pinned",
    "links": "Links",
}
SUMMARY_PREFIX = "group:"
#: A multi-device chart's group of one device's rows is "device:NAME".
DEVICE_GROUP_PREFIX = "device:"
LINKS_GROUP = "links"


def device_group(device: str) -> str:
    """The group of a device's rows (host thread, streams, engines, SMs)."""
    return DEVICE_GROUP_PREFIX + device


def group_title(group: str) -> str:
    """How a group is named in the chart: "Streams", "gpu0", "Links"."""
    if group.startswith(DEVICE_GROUP_PREFIX):
        return group[len(DEVICE_GROUP_PREFIX) :]
    return GROUP_TITLE.get(group, group)


def group_of(key: str) -> str:
    """The group a row belongs to: "host", "streams" or "engines" (the compute row too)."""
    if key == HOST_ROW:
        return "host"
    if key.startswith("stream:"):
        return "streams"
    if key.startswith("engine:") or key == COMPUTE_ROW:
        return "engines"
    return "host" if key.startswith(SUMMARY_PREFIX + "host") else "engines"


def summary_key(group: str) -> str:
    """The row key of a collapsed group's summary row."""
    return SUMMARY_PREFIX + group


def is_summary(key: str) -> bool:
    return key.startswith(SUMMARY_PREFIX)


def summary_row_mask(keys: list[str]) -> np.ndarray:
    """True for each summary row among ``keys``."""
    return np.fromiter((is_summary(k) for k in keys), bool, count=len(keys))


@dataclass
class RowGrouping:
    """What the user chose: collapsed groups, and pinned rows in the order they were pinned."""

    collapsed: set[str] = field(default_factory=set)
    pinned: list[str] = field(default_factory=list)

    def toggle(self, group: str) -> None:
        """Collapse an expanded group, expand a collapsed one."""
        self.collapsed ^= {group}

    def pin(self, key: str, on: bool = True) -> None:
        """Keep a row at the top (``on``) or put it back in its group."""
        if on and key not in self.pinned and not is_summary(key):
            self.pinned.append(key)
        elif not on and key in self.pinned:
            self.pinned.remove(key)


@dataclass
class GroupSpan:
    """A group's place in the rows shown: rows ``first`` to ``first + count - 1``."""

    group: str
    title: str
    first: int
    count: int
    members: int
    collapsed: bool


@dataclass
class RowArrangement:
    """The rows shown (top to bottom), which hidden rows draw on which summary row, the titles
    of the summary rows and where each group is."""

    keys: list[str]
    merge: dict[str, str]
    titles: dict[str, str]
    spans: list[GroupSpan]

    def span_at(self, row: int) -> GroupSpan | None:
        """The group (or the pinned rows) row ``row`` belongs to."""
        for span in self.spans:
            if span.first <= row < span.first + span.count:
                return span
        return None


def device_groups(keys: list[str], devices: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """For a multi-device chart: the groups in order (one per device, then the links) and
    each row's group. ``devices`` maps row keys to device names (``device_rows.row_devices``)."""
    order: list[str] = []
    of: dict[str, str] = {}
    for key in keys:
        device = devices.get(key) or row_device(key)
        group = LINKS_GROUP if is_link_row(key) or device is None else device_group(device)
        of[key] = group
        if group not in order:
            order.append(group)
    if LINKS_GROUP in order:  # the links below every device
        order.remove(LINKS_GROUP)
        order.append(LINKS_GROUP)
    return order, of


def arrange_rows(
    keys: list[str],
    grouping: RowGrouping | None = None,
    devices: dict[str, str] | None = None,
) -> RowArrangement:
    """The rows to show for ``keys`` (every row of the chart, in order) under ``grouping``.

    Pinned rows come first, in pin order; then each group with its rows in their given
    order, or, collapsed, one summary row that shows the union of its rows' bars. A group of
    one row never collapses (its summary would be that row). Without collapsed groups or pins
    the rows are ``keys`` unchanged. With ``devices`` (row key -> device, for a multi-device
    timeline) the groups are the devices and the links instead of host, streams and engines.
    """
    grouping = grouping or RowGrouping()
    if devices:
        groups, of = device_groups(keys, devices)
    else:
        groups, of = list(GROUPS), {k: group_of(k) for k in keys}
    pinned = [k for k in grouping.pinned if k in keys]
    shown: list[str] = list(pinned)
    merge: dict[str, str] = {}
    titles: dict[str, str] = {}
    spans: list[GroupSpan] = []
    if pinned:
        spans.append(GroupSpan("pinned", GROUP_TITLE["pinned"], 0, len(pinned), len(pinned), False))
    for group in groups:
        members = [k for k in keys if of.get(k) == group and k not in pinned]
        if not members:
            continue
        collapsed = group in grouping.collapsed and len(members) > 1
        title = group_title(group)
        first = len(shown)
        if collapsed:
            key = summary_key(group)
            merge.update({k: key for k in members})
            titles[key] = f"{title} ({len(members)})"
            shown.append(key)
        else:
            shown += members
        spans.append(GroupSpan(group, title, first, len(shown) - first, len(members), collapsed))
    return RowArrangement(shown, merge, titles, spans)
