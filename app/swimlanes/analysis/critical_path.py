"""The critical path of a timeline, and every op's slack.

A timeline is a schedule that already happened (simulated or measured). Its ops and host calls
form a graph of "could not start before" links:

* **stream order, events, legacy default stream barriers, hardware queues** and imported flows:
  the timeline's dependency edges (``Timeline.dep_src/dep_dst/dep_kind``);
* **engine order**: a copy engine runs one copy at a time, so each copy follows the one before
  it on its engine; a kernel may have waited for SMs, which the last kernel to end before it
  freed (a guess: the block scheduler's state is not in a timeline);
* **the host thread**: each call starts after the call before it returns, an op cannot start on
  the device before its call was made, and a blocking call (sync, synchronous copy) returns
  only after the device op that released it (the "host" edges).

For every op (on the device and on the host thread) the **binding** link is the one that
arrived last: the op started the observed lag after it (a launch or dependency latency, a host
gap). The **critical path** walks binding links back from whatever finished last: the chain of
ops that set the makespan. An op's **slack** is how much later it could have ended, all else as
it was, before the makespan grows: a backward pass over the links, where a binding link keeps
its observed lag and any other link needs none. Ops on the critical path have zero slack.

Slack is exact for links; the SMs are only approximated: a kernel that runs longer holds its
SMs longer and may delay other kernels that this analysis does not link to it, so a kernel's
slack can be larger than the block scheduler would give. Qt-free.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, Timeline

#: The engine whose ops overlap (kernels share the SMs); every other engine runs one op at a time.
COMPUTE_ENGINE = "Compute"

#: Why a node could not start earlier, in the user's words (the JSON ``via`` key).
LINK_NAMES = {
    "stream": "stream order",
    "event": "event wait",
    "default_stream": "default stream barrier",
    "queue": "hardware queue",
    "flow": "flow",
    "host": "waited for the device",
    "engine": "engine busy",
    "sms": "SMs busy",
    "call": "its call",
    "host_order": "previous host call",
    "collective": "another device's rank of the collective",
}

_HOST_DEP = DEP_KINDS.index("host")
_STREAM_DEP = DEP_KINDS.index("stream")
_EVENT_DEP = DEP_KINDS.index("event")
_COLLECTIVE_DEP = DEP_KINDS.index("collective")


@dataclass(frozen=True)
class PathStep:
    """One op on the critical path: on the device, or its host call (``on_host``)."""

    row: int
    on_host: bool
    start_ns: int
    end_ns: int
    via: str | None  # the binding link into it (a LINK_NAMES key); None for the first step
    lag_ns: int  # start minus the end of the step before it (a latency or a host gap)


@dataclass
class CriticalPath:
    """The critical path (first step first) and per-op slack (ns; -1: the op has no span)."""

    steps: list[PathStep]
    device_slack_ns: np.ndarray
    host_slack_ns: np.ndarray
    makespan_ns: int

    def least_slack_rows(self, count: int | None = None) -> list[int]:
        """Rows of the device ops off the path, least slack first (``count`` of them)."""
        on_path = {s.row for s in self.steps if not s.on_host}
        rows = [
            r for r in range(len(self.device_slack_ns))
            if self.device_slack_ns[r] >= 0 and r not in on_path
        ]  # fmt: skip
        rows.sort(key=lambda r: int(self.device_slack_ns[r]))
        return rows if count is None else rows[:count]

    def share_ns(self, tl: Timeline) -> dict[str, int]:
        """The makespan along the path by what filled it: "host calls", "copies", "kernels",
        "other device ops" and "lags" (latencies and host gaps between steps). A step counts
        only from where the step before it ended (a sync's wait is its releaser's time)."""
        out = {"host calls": 0, "copies": 0, "kernels": 0, "other device ops": 0, "lags": 0}
        prev_end: int | None = None
        for s in self.steps:
            begin = s.start_ns if prev_end is None else max(s.start_ns, prev_end)
            if prev_end is not None and s.start_ns > prev_end:
                out["lags"] += s.start_ns - prev_end
            out[_share_key(tl, s)] += max(0, s.end_ns - begin)
            prev_end = s.end_ns if prev_end is None else max(prev_end, s.end_ns)
        return out


def _share_key(tl: Timeline, step: PathStep) -> str:
    if step.on_host:
        return "host calls"
    kind = tl.op_kind(step.row)
    if kind in ("h2d", "d2h", "d2d"):
        return "copies"
    return "kernels" if kind == "kernel" else "other device ops"


class _Graph:
    """Nodes: device span of row r is node r, host call of row r is node n + r."""

    def __init__(self, tl: Timeline) -> None:
        n = self.n = len(tl)
        self.begin = np.full(2 * n, NO_TIME, dtype=np.int64)
        self.finish = np.full(2 * n, NO_TIME, dtype=np.int64)
        on = tl.on_device
        self.begin[:n][on], self.finish[:n][on] = tl.start[on], tl.end[on]
        called = (tl.issue_start != NO_TIME) & (tl.issue_end != NO_TIME)
        self.begin[n:][called], self.finish[n:][called] = (
            tl.issue_start[called],
            tl.issue_end[called],
        )
        self.src: list[int] = []
        self.dst: list[int] = []
        self.via: list[str] = []
        self._links(tl)

    def has(self, node: int) -> bool:
        return bool(self.begin[node] != NO_TIME)

    def link(self, u: int, v: int, via: str) -> None:
        if u != v and self.has(u) and self.has(v):
            self.src.append(u)
            self.dst.append(v)
            self.via.append(via)

    def _links(self, tl: Timeline) -> None:
        n = self.n
        deps = list(
            zip(tl.dep_src.tolist(), tl.dep_dst.tolist(), tl.dep_kind.tolist(), strict=True)
        )
        prev_in_stream = {d: s for s, d, k in deps if k == _STREAM_DEP}
        calls: dict[int, list[int]] = {}  # a collective's first rank's row -> every rank's
        for s, d, k in deps:
            if k == _COLLECTIVE_DEP:
                calls.setdefault(s, [s]).append(d)
                continue
            if k == _HOST_DEP:  # a blocking call returned when device op s was done
                self.link(s, n + d, "host")
                continue
            self.link(s, d, DEP_KINDS[k])
            wait = prev_in_stream.get(d, -1)
            if k == _EVENT_DEP and wait >= 0 and tl.op_kind(wait) == "event_wait":
                self.link(s, wait, "event")  # the edge goes past the wait to the op after it
        for rows in _engine_rows(tl):
            for u, v in zip(rows[:-1].tolist(), rows[1:].tolist(), strict=True):
                self.link(u, v, "engine")
        for u, v in _sm_frees(tl):
            self.link(u, v, "sms")
        released = {d for _, d, k in deps if k == _HOST_DEP}
        for u, v in _sync_releases(tl, released):
            self.link(u, n + v, "host")
        self._host_links(tl)
        self._collective_links(calls.values())

    def _host_links(self, tl: Timeline) -> None:
        n = self.n
        calls = np.flatnonzero(self.begin[n:] != NO_TIME)
        calls = calls[np.argsort(self.begin[n:][calls], kind="stable")]
        # Each device has a host thread of its own (several where the program declares them):
        # a call follows the one before it on its thread.
        if len(tl.host_thread):
            thread = tl.host_thread[calls]
        else:
            thread = tl.host_device[calls] if len(tl.host_device) else np.zeros(len(calls), int)
        before: dict[int, int] = {}
        for t in np.unique(thread).tolist():
            mine = calls[thread == t].tolist()
            before.update(zip(mine[1:], mine[:-1], strict=True))
        for v, u in before.items():
            self.link(n + u, n + v, "host_order")
        # A call that returned only after its own op ended (a synchronous or pageable copy)
        # was released by it; that op could start once the call before it had returned.
        waits_for_itself = (self.finish[n:] != NO_TIME) & (self.finish[:n] != NO_TIME)
        waits_for_itself &= self.finish[n:] >= self.finish[:n]
        for r in range(n):
            if not waits_for_itself[r]:
                self.link(n + r, r, "call")
                continue
            self.link(r, n + r, "host")
            if r in before:
                self.link(n + before[r], r, "call")

    def _collective_links(self, calls: Iterable[list[int]]) -> None:
        """The ranks of one collective call start together, when the last is ready: whatever
        held back one rank's op held back every rank's."""
        rank_of = {r: tuple(ranks) for ranks in calls for r in ranks}
        into = [(u, v) for u, v in zip(self.src, self.dst, strict=True) if v in rank_of]
        for u, v in into:
            ranks = rank_of[v]
            if u in ranks:
                continue
            for other in ranks:
                if other != v:
                    self.link(u, other, "collective")

    def binding(self) -> tuple[np.ndarray, np.ndarray]:
        """Per link: its observed lag, and whether it arrived last at its node (binding).

        A link from the device op that released a blocking call is measured to the call's end;
        every other link to its node's start."""
        src, dst = np.asarray(self.src, np.int64), np.asarray(self.dst, np.int64)
        is_release = np.asarray([v == "host" for v in self.via], dtype=bool)
        lag = np.where(is_release, self.finish[dst], self.begin[dst]) - self.finish[src]
        arrival = self.finish[src]
        latest = np.full(2 * self.n, NO_TIME, dtype=np.int64)
        np.maximum.at(latest, dst, arrival)
        return lag, arrival == latest[dst]


def is_compute_engine(name: str) -> bool:
    """Whether engine ``name`` is a device's SMs: "Compute", or "gpu1 Compute" on a timeline of
    several devices."""
    return name == COMPUTE_ENGINE or name.endswith(" " + COMPUTE_ENGINE)


def _engine_rows(tl: Timeline) -> list[np.ndarray]:
    """Rows of each one-at-a-time engine, in start order."""
    out = []
    on = tl.on_device
    for e, name in enumerate(tl.engine_names):
        if is_compute_engine(name):
            continue
        rows = np.flatnonzero(on & (tl.engine == e))
        out.append(rows[np.lexsort((tl.end[rows], tl.start[rows]))])
    return out


def _sm_frees(tl: Timeline) -> list[tuple[int, int]]:
    """(u, v): kernel v started after kernel u, the last to end before it, freed its SMs.

    Only a guess at why a kernel waited for SMs (the block scheduler is not in the timeline):
    it binds only when nothing else arrived later."""
    out: list[tuple[int, int]] = []
    for e, name in enumerate(tl.engine_names):  # each device's SMs apart
        if not is_compute_engine(name):
            continue
        rows = np.flatnonzero(tl.on_device & (tl.engine == e))
        if len(rows) < 2:
            continue
        by_end = rows[np.argsort(tl.end[rows], kind="stable")]
        ends = tl.end[by_end]
        before = np.searchsorted(ends, tl.start[rows], side="right") - 1
        out += [
            (int(by_end[b]), int(v))
            for v, b in zip(rows.tolist(), before.tolist(), strict=True)
            if b >= 0 and int(by_end[b]) != v
        ]
    return out


def _sync_releases(tl: Timeline, known: set[int]) -> list[tuple[int, int]]:
    """(u, v): sync call v could return only once device op u was done.

    A device sync waits for every op issued before it, a stream sync for those of its stream;
    each links to the ops that ended since the last sync covering them (the ones before are that
    sync's). The timeline names only the op that ended last; an op that ended earlier still had
    to end before the call could return, or its slack would reach past the sync. An event sync
    whose releaser the timeline does not say (measurements and imports) gets the op that ended
    last during the call."""
    on = tl.on_device
    ends_by_stream: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    every = np.flatnonzero(on)
    every = every[np.argsort(tl.end[every], kind="stable")]
    for s in np.unique(tl.stream[every]).tolist():
        rows = every[tl.stream[every] == s]
        ends_by_stream[s] = (rows, tl.end[rows])
    everything = (every, tl.end[every])
    cover: dict[int | None, int] = {}  # stream (None: all) -> when a sync last covered it
    out: list[tuple[int, int]] = []
    syncs = [
        v
        for v in range(len(tl))
        if tl.op_kind(v) in ("stream_sync", "device_sync", "event_sync")
        and tl.issue_start[v] != NO_TIME
        and tl.issue_end[v] != NO_TIME
    ]
    for v in sorted(syncs, key=lambda r: int(tl.issue_start[r])):
        kind, returned = tl.op_kind(v), int(tl.issue_end[v])
        if kind == "event_sync":
            if v not in known:
                out += _last_ended_during(tl, v, everything)
            continue
        stream = None if kind == "device_sync" else int(tl.stream[v])
        rows, ends = everything if stream is None else ends_by_stream.get(stream, everything)
        since = max(cover.get(None, NO_TIME), cover.get(stream, NO_TIME))
        lo, hi = np.searchsorted(ends, [since, returned], side="right")
        cand = rows[lo:hi]
        cand = cand[(tl.issue_start[cand] < tl.issue_start[v]) & (cand != v)]
        out += [(int(u), v) for u in cand.tolist()]
        cover[stream] = returned
    return out


def _last_ended_during(
    tl: Timeline, v: int, everything: tuple[np.ndarray, np.ndarray]
) -> list[tuple[int, int]]:
    rows, ends = everything
    lo, hi = np.searchsorted(ends, [tl.issue_start[v], tl.issue_end[v]], side="right")
    cand = rows[lo:hi]
    cand = cand[cand != v]
    return [(int(cand[np.argmax(tl.end[cand])]), v)] if len(cand) else []


def critical_path(tl: Timeline) -> CriticalPath:
    """The chain of ops that set ``tl``'s makespan, and every op's slack (see module doc)."""
    g = _Graph(tl)
    n = g.n
    if not any(g.has(v) for v in range(2 * n)):
        empty = np.full(n, -1, dtype=np.int64)
        return CriticalPath([], empty, empty.copy(), 0)
    lag, binding = g.binding()
    steps = _walk_back(g, lag, binding)
    slack = _slack(g, lag, binding)
    return CriticalPath(steps, slack[:n], slack[n:], tl.makespan_ns)


def _walk_back(g: _Graph, lag: np.ndarray, binding: np.ndarray) -> list[PathStep]:
    into: dict[int, list[int]] = {}
    for e in np.flatnonzero(binding).tolist():
        into.setdefault(g.dst[e], []).append(e)
    finish = np.where(g.finish != NO_TIME, g.finish, np.iinfo(np.int64).min)
    # The last node to finish; on a tie the host call (a sync returning with the last op).
    node = len(finish) - 1 - int(np.argmax(finish[::-1]))
    steps: list[PathStep] = []
    seen: set[int] = set()
    while node not in seen:
        seen.add(node)
        edges = into.get(node, [])
        # Prefer what the device did over the host thread, then the latest-ending source.
        pick = max(
            edges, key=lambda e: (g.via[e] != "host_order", g.finish[g.src[e]]), default=None
        )
        steps.append(_step(g, node, None if pick is None else g.via[pick], lag, pick))
        if pick is None:
            break
        node = g.src[pick]
    steps.reverse()
    return steps


def _step(g: _Graph, node: int, via: str | None, lag: np.ndarray, edge: int | None) -> PathStep:
    n = g.n
    return PathStep(
        row=node % n,
        on_host=node >= n,
        start_ns=int(g.begin[node]),
        end_ns=int(g.finish[node]),
        via=via,
        lag_ns=0 if edge is None else int(lag[edge]),
    )


def _slack(g: _Graph, lag: np.ndarray, binding: np.ndarray) -> np.ndarray:
    """Latest finish of every node without moving the last end, minus its finish."""
    n2 = 2 * g.n
    present = g.finish != NO_TIME
    t_end = int(g.finish[present].max())
    latest = np.where(present, t_end, NO_TIME).astype(np.int64)
    need = _needed_lags(g, lag, binding)
    is_release = [v == "host" for v in g.via]
    # A call whose end a device op set (it waited) has no duration of its own to keep.
    release_bound = np.zeros(n2, dtype=bool)
    release_bound[[g.dst[e] for e in np.flatnonzero(binding).tolist() if is_release[e]]] = True
    out_edges: dict[int, list[int]] = {}
    for e, u in enumerate(g.src):
        out_edges.setdefault(u, []).append(e)
    for u in _reverse_topological(g, n2):
        for e in out_edges.get(u, []):
            v = g.dst[e]
            # A released call's end follows its releaser; any other link feeds a start.
            dur = 0 if is_release[e] or release_bound[v] else g.finish[v] - g.begin[v]
            bound = int(latest[v] - dur - need[e])
            if bound < latest[u]:
                latest[u] = bound
    slack = np.where(present, latest - g.finish, -1)
    return np.maximum(slack, np.where(present, 0, -1))


def _needed_lags(g: _Graph, lag: np.ndarray, binding: np.ndarray) -> np.ndarray:
    """The lag each link must keep: a binding link its observed lag; another link the binding
    lag of its kind into the same op (the same latency applies: a sync returns as long after
    any op it waits for), or none."""
    kept: dict[tuple[int, str], int] = {}
    for e in np.flatnonzero(binding).tolist():
        key = (g.dst[e], g.via[e])
        kept[key] = min(kept.get(key, int(lag[e])), int(lag[e]))
    need = np.minimum(lag, 0)
    for e in range(len(g.src)):
        key = (g.dst[e], g.via[e])
        if binding[e]:
            need[e] = lag[e]
        elif key in kept:
            need[e] = min(int(lag[e]), kept[key])
    return need


def _reverse_topological(g: _Graph, n_nodes: int) -> list[int]:
    """Nodes, every one before the nodes it links from (Kahn's algorithm; links only go
    forward in time, so a cycle can only come from zero-length ties and is broken by time)."""
    indeg = np.zeros(n_nodes, dtype=np.int64)
    np.add.at(indeg, np.asarray(g.dst, np.int64), 1)
    succ: dict[int, list[int]] = {}
    for u, v in zip(g.src, g.dst, strict=True):
        succ.setdefault(u, []).append(v)
    order: list[int] = []
    ready = [v for v in range(n_nodes) if indeg[v] == 0]
    while ready:
        u = ready.pop()
        order.append(u)
        for v in succ.get(u, []):
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if len(order) < n_nodes:  # a tie cycle: finish the rest in time order
        rest = [v for v in range(n_nodes) if indeg[v] > 0]
        order += sorted(rest, key=lambda v: (int(g.begin[v]), int(g.finish[v])))
    order.reverse()
    return order
