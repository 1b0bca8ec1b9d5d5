"""Pipeline generators: the shipped examples, their variants, and random pipelines.

The example files in ``resources/examples`` are built from these functions (their prose lives in
the files), so tests and benchmarks can make variants of a lesson (more chunks, another issue
order, non-blocking streams) without copying JSON around.

Copy sizes are chosen so that a copy of ``bytes`` takes about its ``duration_us`` on an H200
(pinned host memory, about 55 GB/s), which keeps every example runnable on a real GPU.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from swimlanes.model.document import HOST_MEMORY_KINDS, STREAM_KINDS, Op, Pipeline, Stream

# The multi-device generator lives in its own module; importable from here with the others.
from swimlanes.model.generators_multi import (
    random_multi_device_pipeline as random_multi_device_pipeline,
)
from swimlanes.model.generators_threads import per_thread_streams_pipeline

#: Pinned host <-> device copy bandwidth of an H200 in bytes per microsecond (55 GB/s).
H200_PINNED_BYTES_PER_US = 55_000.0
PAGE = 4096
ISSUE_ORDERS: tuple[str, ...] = ("depth", "breadth")


def bytes_for_us(duration_us: float, bytes_per_us: float = H200_PINNED_BYTES_PER_US) -> int:
    """Bytes that a pinned H200 copy moves in ``duration_us`` (whole pages, at least one)."""
    return max(PAGE, round(duration_us * bytes_per_us / PAGE) * PAGE)


def _kernel(stream: str, label: str, duration_us: float, blocks: int, threads: int = 256) -> Op:
    return Op(
        "kernel",
        stream=stream,
        label=label,
        blocks=blocks,
        threads=threads,
        duration_us=duration_us,
    )


def _copy(
    kind: str,
    stream: str | None,
    label: str,
    nbytes: int,
    *,
    duration_us: float | None = None,
    host_memory: str | None = None,
    is_async: bool | None = None,
) -> Op:
    return Op(
        kind,
        stream=stream,
        label=label,
        bytes=nbytes,
        duration_us=duration_us,
        host_memory=host_memory,
        is_async=is_async,
    )


def _streams(names: list[str], kind: str = "blocking", priority: int = 0) -> list[Stream]:
    if kind not in STREAM_KINDS or kind == "legacy_default":
        raise ValueError(
            f"stream_kind must be blocking, non_blocking or per_thread_default: {kind}"
        )
    return [Stream(n, kind, priority) for n in names]


# -- textbook pipelines ---------------------------------------------------------------------------
def two_streams_pipeline(unit_us: float = 1000.0, stream_kind: str = "blocking") -> Pipeline:
    """Seed exercise: H2D, kernel, D2H of one unit each for A on ``s1`` and B on ``s2``.

    On the ``ideal`` preset: serial 6 units, two streams 4 units, speedup 1.50x.
    """
    nbytes = bytes_for_us(unit_us)
    program: list[Op] = []
    for data, stream in (("A", "s1"), ("B", "s2")):
        program += [
            _copy("h2d", stream, f"H2D {data}", nbytes, duration_us=unit_us, host_memory="pinned"),
            _kernel(stream, f"K {data}", unit_us, blocks=1024, threads=256),
            _copy("d2h", stream, f"D2H {data}", nbytes, duration_us=unit_us, host_memory="pinned"),
        ]
    program.append(Op("device_sync", label="wait for A and B"))
    return Pipeline("two-streams", _streams(["s1", "s2"], stream_kind), program)


def chunked_pipeline(
    n_chunks: int,
    n_streams: int,
    h2d_us: float = 30000.0,
    kernel_us: float = 20000.0,
    d2h_us: float = 30000.0,
    order: str = "depth",
    stream_kind: str = "blocking",
    host_memory: str = "pinned",
    *,
    copy_durations: bool = True,
    kernel_blocks: int = 1024,
    kernel_threads: int = 256,
    name: str | None = None,
) -> Pipeline:
    """Split H2D -> kernel -> D2H of the whole data into ``n_chunks`` over ``n_streams`` streams.

    Chunk ``i`` goes to stream ``i % n_streams``. ``order="depth"`` issues each chunk's three
    ops together (loop over chunks); ``"breadth"`` issues all H2D, then all kernels, then all
    D2H. The ``*_us`` figures are for the whole data; each chunk gets its share. With
    ``copy_durations`` the copies carry ``duration_us`` (exact textbook times on every preset);
    without, their time comes from the preset's bandwidth model for ``bytes`` (needed to see
    pageable memory or an older bus). Ends with a device synchronisation.
    """
    if n_chunks < 1 or n_streams < 1:
        raise ValueError("n_chunks and n_streams must be at least 1")
    if order not in ISSUE_ORDERS:
        raise ValueError(f"order must be one of {ISSUE_ORDERS}: {order!r}")
    if host_memory not in HOST_MEMORY_KINDS:
        raise ValueError(f"host_memory must be one of {HOST_MEMORY_KINDS}: {host_memory!r}")
    names = [f"s{i + 1}" for i in range(n_streams)]
    h2d_bytes = bytes_for_us(h2d_us / n_chunks)
    d2h_bytes = bytes_for_us(d2h_us / n_chunks)
    stages: list[list[Op]] = [[], [], []]
    for c in range(n_chunks):
        s = names[c % n_streams]
        stages[0].append(
            _copy(
                "h2d",
                s,
                f"H2D chunk {c}",
                h2d_bytes,
                duration_us=h2d_us / n_chunks if copy_durations else None,
                host_memory=host_memory,
            )
        )
        stages[1].append(
            _kernel(s, f"K chunk {c}", kernel_us / n_chunks, kernel_blocks, kernel_threads)
        )
        stages[2].append(
            _copy(
                "d2h",
                s,
                f"D2H chunk {c}",
                d2h_bytes,
                duration_us=d2h_us / n_chunks if copy_durations else None,
                host_memory=host_memory,
            )
        )
    if order == "depth":
        program = [op for chunk in zip(*stages, strict=True) for op in chunk]
    else:
        program = [op for stage in stages for op in stage]
    program.append(Op("device_sync", label="wait for all chunks"))
    default_name = f"chunked {n_chunks} chunks / {n_streams} streams ({order}-first)"
    return Pipeline(name or default_name, _streams(names, stream_kind), program)


# -- the traps ------------------------------------------------------------------------------------
def default_stream_trap_pipeline(
    stream_kind: str = "blocking", n_batches: int = 4, copy_bytes: int = 32 * 2**20
) -> Pipeline:
    """Batches alternate between ``s1`` and ``s2``; after each, a tiny kernel on the legacy default
    stream. With blocking streams that kernel waits for all earlier work in both streams and all
    later work waits for it; with ``non_blocking`` streams the batches overlap."""
    program: list[Op] = []
    for b in range(n_batches):
        s = f"s{b % 2 + 1}"
        program += [
            _copy("h2d", s, f"H2D batch {b}", copy_bytes, host_memory="pinned"),
            _kernel(s, f"K batch {b}", 500.0, blocks=512),
            _copy("d2h", s, f"D2H batch {b}", copy_bytes, host_memory="pinned"),
            _kernel("default", f"bookkeeping {b} (default stream)", 5.0, blocks=1, threads=32),
        ]
    program.append(Op("device_sync", label="wait for everything"))
    return Pipeline("default-stream trap", _streams(["s1", "s2"], stream_kind), program)


def pageable_trap_pipeline(host_memory: str = "pageable") -> Pipeline:
    """The chunked pipeline (4 chunks, 4 streams) with copy times from the bandwidth model.

    Pageable H2D copies are staged through a driver buffer by the host thread, and pageable D2H
    copies block it until done, so the chunks cannot overlap.
    """
    return chunked_pipeline(
        4,
        4,
        h2d_us=5000.0,
        kernel_us=4000.0,
        d2h_us=5000.0,
        host_memory=host_memory,
        copy_durations=False,
        name=f"{host_memory} trap: 4 chunks / 4 streams",
    )


def ping_pong_pipeline(
    n_frames: int = 8,
    upload_bytes: int = 32 * 2**20,
    kernel_us: float = 800.0,
    result_bytes: int = 8 * 2**20,
) -> Pipeline:
    """Double buffering: an ``upload`` stream fills buffers A and B in turn, a ``compute`` stream
    processes them. Events guard each buffer: ``ready A`` (upload done, compute may read) and
    ``free A`` (compute done, the next upload may overwrite)."""
    program: list[Op] = []
    for f in range(n_frames):
        buf = "AB"[f % 2]
        if f >= 2:
            program.append(Op("event_wait", stream="upload", event=f"free {buf}"))
        program += [
            _copy("h2d", "upload", f"H2D frame {f} -> {buf}", upload_bytes, host_memory="pinned"),
            Op("event_record", stream="upload", event=f"ready {buf}"),
            Op("event_wait", stream="compute", event=f"ready {buf}"),
            _kernel("compute", f"K frame {f} ({buf})", kernel_us, blocks=2048),
            Op("event_record", stream="compute", event=f"free {buf}"),
            _copy("d2h", "compute", f"D2H result {f}", result_bytes, host_memory="pinned"),
        ]
    program.append(Op("stream_sync", stream="compute", label="wait for the last result"))
    return Pipeline("ping-pong buffers", _streams(["upload", "compute"]), program)


def event_dependency_pipeline(n_batches: int = 4) -> Pipeline:
    """A three-stage inference pipeline: ``preprocess`` -> ``infer`` -> ``postprocess`` streams,
    each stage waiting for the previous one's event for the same batch."""
    program: list[Op] = []
    for b in range(n_batches):
        program += [
            _copy("h2d", "preprocess", f"H2D images {b}", 24 * 2**20, host_memory="pinned"),
            _kernel("preprocess", f"resize+normalize {b}", 300.0, blocks=256),
            Op("event_record", stream="preprocess", event="preprocessed"),
            Op("event_wait", stream="infer", event="preprocessed"),
            _kernel("infer", f"encoder {b}", 1000.0, blocks=2048),
            _kernel("infer", f"decoder {b}", 800.0, blocks=2048),
            Op("event_record", stream="infer", event="inferred"),
            Op("event_wait", stream="postprocess", event="inferred"),
            _kernel("postprocess", f"argmax+nms {b}", 200.0, blocks=128),
            _copy("d2h", "postprocess", f"D2H results {b}", 4 * 2**20, host_memory="pinned"),
        ]
    program.append(Op("stream_sync", stream="postprocess", label="wait for the last batch"))
    streams = _streams(["preprocess", "infer", "postprocess"])
    return Pipeline("multi-stage inference", streams, program)


def priority_pipeline(
    urgent_priority: int = -5,
    n_requests: int = 8,
    long_block_us: float = 500.0,
    long_waves: int = 40,
    request_gap_us: float = 2000.0,
) -> Pipeline:
    """A long kernel on a low-priority ``bulk`` stream (priority 0) fills the GPU in waves while
    short kernels arrive on an ``urgent`` stream every ``request_gap_us``. With a higher priority
    (lower number) their blocks are dispatched ahead of the long kernel's pending blocks."""
    long_blocks = 132 * 8 * long_waves  # 8 resident 256-thread blocks per SM on 132 SMs
    program: list[Op] = [
        Op(
            "kernel",
            stream="bulk",
            label="long simulation step",
            blocks=long_blocks,
            threads=256,
            block_us=long_block_us,
        )
    ]
    for r in range(n_requests):
        program += [
            Op("host", label=f"wait for request {r}", duration_us=request_gap_us),
            Op(
                "kernel",
                stream="urgent",
                label=f"request {r}",
                blocks=132,
                threads=256,
                block_us=50.0,
            ),
        ]
    program.append(Op("device_sync", label="wait for everything"))
    streams = [Stream("bulk", "non_blocking", 0), Stream("urgent", "non_blocking", urgent_priority)]
    return Pipeline("stream priorities", streams, program)


def launch_bound_pipeline(n_kernels: int = 400, kernel_us: float = 2.0) -> Pipeline:
    """Hundreds of tiny kernels on one stream: host launch cost, not the GPU, sets the pace."""
    program = [
        _kernel("s1", f"tiny {i}", kernel_us, blocks=32, threads=128) for i in range(n_kernels)
    ]
    program.append(Op("stream_sync", stream="s1", label="wait for the last kernel"))
    return Pipeline("launch-bound", _streams(["s1"]), program)


def swimming_pipeline(
    sync_copies: bool = False,
    n_matmuls: int = 200,
    matmul_us: float = 40.0,
    n_copies: int = 100,
    copy_bytes: int = 4 * 2**20,
) -> Pipeline:
    """Seed puzzle "swimming in streams": matmuls on one stream, D2H copies on a second and H2D
    copies on a third, issued loop after loop. ``sync_copies`` is ``.to(non_blocking=False)``:
    each copy blocks the host until done, so the next one cannot be issued ahead."""
    is_async = not sync_copies
    program = [
        _kernel("matmul", f"matmul {i}", matmul_us, blocks=128, threads=256)
        for i in range(n_matmuls)
    ]
    program += [
        _copy("d2h", "to_cpu", f"D2H {i}", copy_bytes, host_memory="pinned", is_async=is_async)
        for i in range(n_copies)
    ]
    program += [
        _copy("h2d", "to_gpu", f"H2D {i}", copy_bytes, host_memory="pinned", is_async=is_async)
        for i in range(n_copies)
    ]
    program.append(Op("device_sync", label="wait for everything"))
    kind = "sync" if sync_copies else "async"
    return Pipeline(
        f"swimming in streams ({kind} copies)", _streams(["matmul", "to_cpu", "to_gpu"]), program
    )


#: How each shipped example (file stem) is built; the files add the prose.
EXAMPLE_BUILDERS: dict[str, Callable[[], Pipeline]] = {
    "two-streams": two_streams_pipeline,
    "chunked-overlap": lambda: chunked_pipeline(4, 4, name="chunked overlap: 4 chunks / 4 streams"),
    "default-stream-trap": default_stream_trap_pipeline,
    "pageable-trap": pageable_trap_pipeline,
    "ping-pong": ping_pong_pipeline,
    "breadth-vs-depth": lambda: chunked_pipeline(
        4,
        4,
        h2d_us=4800.0,
        kernel_us=4800.0,
        d2h_us=4800.0,
        order="breadth",
        name="breadth-first issue: 4 chunks / 4 streams",
    ),
    "event-dependency": event_dependency_pipeline,
    "priority": priority_pipeline,
    "launch-bound": launch_bound_pipeline,
    "swimming-in-streams": swimming_pipeline,
    "swimming-in-streams-sync": lambda: swimming_pipeline(sync_copies=True),
    "per-thread-default-stream": per_thread_streams_pipeline,
}


def example_pipeline(name: str) -> Pipeline:
    """The pipeline (streams and program) of a shipped example, built fresh."""
    try:
        return EXAMPLE_BUILDERS[name]()
    except KeyError:
        raise ValueError(f"no example generator named {name!r}") from None


# -- random pipelines -----------------------------------------------------------------------------
_RANDOM_KINDS = ("h2d", "d2h", "d2d", "memset", "kernel", "kernel", "kernel", "event_record")


def random_pipeline(n_ops: int, n_streams: int = 8, seed: int = 0) -> Pipeline:
    """A valid pipeline of about ``n_ops`` ops over ``n_streams`` streams, deterministic in
    ``seed``: copies (pinned and pageable, a few synchronous), kernels in all three timing forms,
    event record/wait pairs, and an occasional legacy-default-stream op or sync. For property
    tests and benchmarks."""
    rng = random.Random(seed)
    kinds = ("blocking", "non_blocking")
    streams = [
        Stream(f"s{i}", kinds[i % 4 == 3], -1 if i % 3 == 0 else 0) for i in range(n_streams)
    ]
    names = [s.name for s in streams]
    program: list[Op] = []
    recorded: list[str] = []
    for i in range(n_ops):
        s = rng.choice(names)
        roll = rng.random()
        if roll < 0.01:
            program.append(Op("stream_sync", stream=s) if roll < 0.005 else Op("device_sync"))
            continue
        if roll < 0.02:
            program.append(_kernel("default", f"k{i}", 5.0, blocks=4, threads=64))
            continue
        kind = rng.choice(_RANDOM_KINDS)
        if kind in ("h2d", "d2h"):
            pinned = rng.random() < 0.9
            program.append(
                _copy(
                    kind,
                    s,
                    f"{kind} {i}",
                    rng.choice((4096, 2**20, 8 * 2**20)),
                    host_memory="pinned" if pinned else "pageable",
                    is_async=rng.random() < 0.97,
                )
            )
        elif kind in ("d2d", "memset"):
            program.append(
                Op(kind, stream=s, bytes=rng.choice((2**16, 2**20)), label=f"{kind} {i}")
            )
        elif kind == "kernel":
            op = Op("kernel", stream=s, label=f"k{i}", blocks=rng.choice((1, 32, 264, 2048)))
            op.threads = rng.choice((64, 256, 1024))
            form = rng.random()
            if form < 0.6:
                op.duration_us = rng.choice((2.0, 20.0, 200.0))
            elif form < 0.9:
                op.block_us = rng.choice((1.0, 10.0))
            else:
                op.flops, op.bytes = 1e9, 2**24
            program.append(op)
        elif recorded and rng.random() < 0.5:
            program.append(Op("event_wait", stream=s, event=rng.choice(recorded)))
        else:
            event = f"e{len(recorded) % 64}"
            recorded.append(event)
            program.append(Op("event_record", stream=s, event=event))
    return Pipeline(f"random {n_ops} ops / {n_streams} streams (seed {seed})", streams, program)
