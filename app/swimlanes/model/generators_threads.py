"""The per-thread default stream lesson: two host threads, each copying and processing its own
batches on its own default stream (CUDA 7's ``--default-stream per-thread``)."""

from __future__ import annotations

from swimlanes.model.document import HostThread, Op, Pipeline, Stream

#: Bytes of one batch's copy each way (about 400 us over an H200's pinned PCIe link).
BATCH_BYTES = 16 << 20
KERNEL_US = 600.0


def per_thread_streams_pipeline(batches: int = 4, legacy: bool = False) -> Pipeline:
    """Two host threads, ``worker0`` and ``worker1``, each running ``batches`` batches (copy
    in, kernel, copy out, pinned and async) on its own per-thread default stream, then
    synchronising it. ``legacy``: the same calls on the legacy default stream, as a program
    compiled without ``--default-stream per-thread`` makes them."""
    threads = ["worker0", "worker1"]
    streams = [Stream(f"{t} default", "per_thread_default", 0, host_thread=t) for t in threads]
    program: list[Op] = []
    for b in range(batches):
        for t, s in zip(threads, streams, strict=True):
            stream = None if legacy else s.name
            who = t if legacy else None  # on the legacy stream, say which thread calls
            program += [
                Op("h2d", stream=stream, label=f"{t} in {b}", bytes=BATCH_BYTES, host_thread=who),
                Op(
                    "kernel",
                    stream=stream,
                    label=f"{t} k{b}",
                    blocks=132,
                    threads=1024,
                    duration_us=KERNEL_US,
                    host_thread=who,
                ),  # fmt: skip
                Op("d2h", stream=stream, label=f"{t} out {b}", bytes=BATCH_BYTES, host_thread=who),
            ]
    for t, s in zip(threads, streams, strict=True):
        program.append(Op("stream_sync", stream="default" if legacy else s.name, host_thread=t))
    return Pipeline(
        name="per-thread default streams",
        streams=[] if legacy else streams,
        program=program,
        host_threads=[HostThread(t) for t in threads],
    )
