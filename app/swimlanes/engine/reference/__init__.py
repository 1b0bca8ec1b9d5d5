"""The reference simulator: a plainly written model of the simulator's semantics.

``simulate_reference(pipeline, preset)`` returns the :class:`Timeline` that
:func:`swimlanes.engine.simulate` should, op for op and nanosecond for nanosecond (the known
discrepancies are listed at the end); the differential tests (``tests/engine/test_reference.py``)
hold the fast engine to it. It is slow (named objects per op and per event, no inlining) and
meant to be read. What follows is what the simulator means, rule by rule. Times are integer
nanoseconds from the first call (t = 0); a preset's figures in microseconds are rounded to ns
once.

1. **Host thread** (``Simulation.host_call``). The program is issued in order, one call after
   another: each call costs ``host_call_gap_us`` (none before the first) plus the preset's
   ``issue_cost_us`` of its kind, or its ``repeat_issue_cost_us`` when it repeats the call just
   before it (the same op with the same arguments, any stream); an op's own ``call_us`` (a
   captured call's measured time) replaces either. An op takes effect when its
   call's cost is spent; the call then returns at once except:

   - a synchronous copy, and any copy involving pageable memory other than an async pageable
     H2D, returns when the copy is done, ``sync_return_us["sync_copy"]`` later (a pageable D2H
     with ``pageable_d2h_chunk_bytes`` also copies its last chunk out: one chunk at the
     host's copy-out rate);
   - an async pageable H2D returns after the host has staged all of its bytes (at the host's
     staging rate, or its ``duration_us``; with a ``call_us``, the whole measured call, the
     host stages for what is left of it after the preset's cost of the call); with ``pageable_h2d_chunk_bytes`` its DMA may start
     only once the first chunk is staged (the staging time times chunk / bytes, rounded down);
   - ``stream_sync`` waits for the last enqueued op of its stream (the legacy default stream
     when none is named), ``event_sync`` for the event's record (rule 2), ``device_sync`` and
     ``free`` for every stream's last op (nothing to wait for: it returns at once); each
     returns ``sync_return_us`` of its kind (``free`` counts as ``device_sync``) after the
     last of them is done, or as soon as it looks if that is later (its call ends after the
     op did);
   - ``host`` keeps the host busy for its duration;
   - ``malloc`` and a synchronous ``memset`` are device-wide implicit synchronisations (rule 3)
     and do not wait.

   A blocking call that waited for other ops draws a "host" edge from the one done last (the
   first listed of those done together) to itself.

2. **Streams and events.** Each stream runs its ops in issue order: an op waits for the
   previous op of its stream ("stream" edge). ``event_wait`` also waits for the most recent
   ``event_record`` of its event in the program before it (never recorded: only its stream);
   the "event" edge goes from the record to the next op of the wait's stream that is not a
   wait. ``event_record`` and ``event_wait`` take no time: they are done when they leave their
   queue. ``event_sync`` waits for the same record on the host.

3. **The legacy default stream and implicit synchronisation** (``stream_deps``). An op on the
   legacy default stream waits for the last op of every blocking stream (``blocking`` and
   ``per_thread_default`` kinds) it has not already waited for; the next op of each blocking
   stream waits for the latest legacy op. ``non_blocking`` streams are exempt. An implicit
   synchronisation (``malloc``, synchronous ``memset``) makes the first op of each stream
   issued after it wait for every stream's last op that was not yet done when the call took
   effect (a synchronous memset: those, and then later work waits for the memset itself).
   All these are "default_stream" edges.

4. **Hardware queues** (``examine``). An enqueued op joins a FIFO queue: Hyper-Q maps
   streams round-robin in creation order onto ``connections`` queues (0: one per stream; the
   legacy default stream has a queue of its own), and with ``copy_queue_per_stream`` a
   stream's H2D and D2H copies use a queue of the stream's own. With ``queue_choice`` "free"
   (and ``connections``) an op bound for a connection queue picks it as it reaches the GPU
   (``hardware_queue``): its stream's queue while the stream has an op waiting in one, else
   the lowest-numbered empty one, else the next of a round-robin over them (from the first,
   advancing on each such choice). Fermi has one compute queue
   and one queue per copy engine. Only a queue's head may leave, once everything it waits for
   is done and it may start: no earlier than its call returned plus its launch latency
   (``kernel_launch_latency_us`` for kernels, ``copy_launch_latency_us`` for H2D and D2H,
   ``host_func_latency_us`` for host functions) and, per op it waited for, that op's
   completion plus the dependency latency between their engine classes (rule 9). A head that
   cannot leave holds back everything behind it, whatever the stream: where a queue carries
   several streams, an op that leaves in the same instant as another stream's op just before
   it, though it could have left earlier, gets a "queue" edge from that op.

5. **Engines.** A queue's head goes, as it leaves, to its engine: H2D and D2H copies to the
   copy engines (rule 6), kernels, D2D copies and memsets to the block scheduler (rule 7),
   host functions to the callback thread (they run their duration there, any number at once;
   the run's first wakes the thread, which takes ``host_func_cold_latency_us`` instead of
   ``host_func_latency_us`` after it may run, and until then the thread starts none),
   event ops nowhere (done at once).

6. **Copy engines** (``devices.CopyEngines``). ``copy_engines_per_direction`` H2D engines
   and as many D2H engines (one pool of that many serving both directions with
   ``shared_copy_engine``); each runs one copy at a time for its time alone (latency +
   bytes / bandwidth, a measured table, pageable rates or chunked staging, or
   ``duration_us``). An idle engine that has rested takes, among the ready copies of its pool,
   the one of the stream it served last (of the copy channel, with ``copy_channels``), else
   the longest waiting (``copy_order``
   "stream_fifo") or the most recently readied ("measured"); or simply the longest waiting
   ("fifo", and always on Fermi); ties by program order.
   Bandwidth is fluid: while k copies of one direction run each takes k times as long, and
   while both directions run each is slowed by ``1 + bidirectional_slowdown`` (its
   direction's) and pays its direction's ``bidirectional_overhead_us`` once; speeds are
   recomputed whenever a copy starts or ends (a copy's time left is kept as float ns alone
   and its end rounded to the ns at each change). After a copy the engine rests
   ``copy_engine_gap_us``, plus ``bidirectional_rest_us`` if the copy ran against the other
   direction at any time.

7. **Block scheduler** (``devices.Sms``). The GPU has ``sm_count`` x ``max_threads_per_sm``
   thread slots. A kernel's block holds ``max_threads_per_sm // residency`` slots, residency
   being ``min(max_blocks_per_sm, max_threads_per_sm // threads)`` (or the op's
   ``blocks_per_sm``); at most ``sm_count`` x residency of its blocks run at once. Waiting
   kernels are served highest stream priority first, then in the order they reached the
   scheduler (one not yet started waits while ``max_resident_kernels`` kernels have blocks
   on the GPU); each starts as many blocks as fit, which run together for one wave's time
   (the kernel's time alone over its waves; rounding carried from wave to wave) and free
   their slots together. A kernel's last wave lasts ``kernel_overhead_us`` longer. A D2D
   copy or memset is one wave of ``sm_count`` 256-thread blocks lasting its time alone. A
   kernel starts with its first blocks and ends with its last.

8. **Fermi's completion signal** (``completion_signal_delay``). A kernel whose previous op in
   the program is a kernel of another stream, the last to reach the SMs before it, joins that
   kernel's group if the group still runs; each kernel's completion becomes visible only when its
   group's last kernel ends (its own span still ends on time).

9. **Dependency latencies** (``program.latency_table``). Engine classes: the SMs, H2D copies
   (and all copies of a shared engine), D2H copies, host functions; event ops take the class
   of the op they waited for that was done last. From an op on one class to a waiting op on
   another: ``dependency_latency_us``; SMs to SMs: ``kernel_dependency_latency_us``; copies of one
   class: none (their engine rests instead); to a host function: ``host_func_latency_us``.

10. **One instant.** Host calls due at an instant come before device events due at it (so an
    implicit synchronisation at t counts an op ending at t as not yet done); device events
    of one instant are handled in the order they were scheduled; after each host call or
    event the queues that may move are looked at; idle engines take their next work only
    once nothing else happens at the instant. Kernels (and D2D copies and memsets) that reach
    the block scheduler at one instant are served, within a priority, in program order, and
    copies readied at one instant go by program order (rule 6): no other result depends on
    the order in which the simultaneous happenings of an instant are handled.

11. **Several devices** (``system.py``, ``layout.py``, ``links.py``, ``collectives.py``;
    :func:`swimlanes.engine.multi.simulate_multi_device`). A pipeline of several devices, or
    with a peer copy or collective, is simulated per device by rules 1 to 10: each device has
    its own copy engines, block scheduler, hardware queues, legacy default stream and
    implicit synchronisations, and its own host thread issuing that device's ops in program
    order; all host threads start at t = 0 (calls due at one instant: the first device's
    first). Events are global: an event wait or sync waits for the latest record of its event
    earlier in the program, on any device. A peer copy holds its source's D2H and its
    destination's H2D copy engine for its span (peer copies take free engines before the
    devices' own copies at each instant) and flows over the link source -> destination after
    ``link_latency_us``, copies on one link sharing its ``link_gbps`` fluidly; from a device to
    itself it is a D2D copy. Collectives form instances per communicator (the k-th call of
    each member), which start when the last member's op leaves its queue, all members' ops
    with one start and end: ``nccl_latency_us`` + bytes x ring factor / ``nccl_bus_gbps``,
    holding ``nccl_channels`` SMs on each member. Ops that can never run (collectives issued
    in different orders) are refused with a MultiDeviceError. The multi-device engine orders
    one instant's happenings as the fast engine does (its default ``fast_engine_ties``), so
    that devices that do not interact get the fast engine's schedule each.

12. **Several host threads** (``threads.py``, ``system.py``). A program that declares several
    host threads on a device is simulated by the model of rule 11: each thread issues its own
    ops (an op's ``host_thread``, else its stream's thread, else its device's first) in
    program order, all threads starting at t = 0 (calls due at one instant: the first
    thread's first) and paying rule 1's costs on their own (a call is warm when it repeats its
    own thread's previous call). A synchronisation blocks only the thread that calls it;
    ``device_sync`` still waits for all of its device's work, whichever thread issued it. A
    ``per_thread_default`` stream belongs to one thread, which alone issues on it; it follows
    rule 3 as any blocking stream does, and the legacy default stream is every thread's.

The known discrepancy with the fast engine (the tests mark it; see docs/simulating.md):

- *Ties at the block scheduler.* The fast engine serves kernels that reach the scheduler at
  one instant in the order it happened to handle them: the queues released by one op are
  looked at last-waiting first (its to-do list of queues is a stack), except where a preset's
  dependency latency schedules their wake-ups, which run in waiting order. So the same two
  kernels released together by a legacy-stream kernel go later-issued first on ``ideal`` and
  earlier-issued first on ``ideal`` with a 1 us kernel dependency latency.
  ``simulate_reference_with_fast_engine_ties`` reproduces that order (a stack of queues to
  look at, the fast engine's wake-ups, kernels in the order they arrived), so that the tests
  tell this discrepancy from any other.
"""

from __future__ import annotations

import numpy as np

from swimlanes.engine.presets import DevicePreset, get_preset
from swimlanes.engine.reference.columns import op_columns
from swimlanes.engine.reference.program import REFERENCE_KINDS, op_table, stream_table
from swimlanes.engine.reference.run import Simulation
from swimlanes.model.document import Pipeline
from swimlanes.model.op_kinds import register_layer
from swimlanes.timeline.timeline import Timeline

# Its per-kind tables (program.py): the single-device kinds here, the multi-device kinds in
# system.py (peer copies, collectives).
register_layer("reference", REFERENCE_KINDS)

__all__ = ["simulate_reference", "simulate_reference_with_fast_engine_ties"]


def simulate_reference(pipeline: Pipeline, device: DevicePreset | str = "h200") -> Timeline:
    """Simulate ``pipeline`` on ``device`` (a preset or a name or path for
    :func:`~swimlanes.engine.get_preset`) with the reference model; see the module docstring."""
    return _simulate(pipeline, device, fast_engine_ties=False)


def simulate_reference_with_fast_engine_ties(
    pipeline: Pipeline, device: DevicePreset | str = "h200"
) -> Timeline:
    """The reference model, but with the fast engine's order among kernels that reach the
    block scheduler at one instant (the known discrepancy of rule 10): the differential tests
    use it to tell that discrepancy from any other. Remove it once the fast engine serves such
    kernels in program order."""
    return _simulate(pipeline, device, fast_engine_ties=True)


def _simulate(pipeline: Pipeline, device: DevicePreset | str, fast_engine_ties: bool) -> Timeline:
    preset = device if isinstance(device, DevicePreset) else get_preset(device)
    from swimlanes.engine.multi import needs_multi_device, simulate_multi_device

    if needs_multi_device(pipeline):  # rule 11
        return simulate_multi_device(pipeline, preset, fast_engine_ties=fast_engine_ties)
    streams, queue_count = stream_table(pipeline, preset)
    ops = op_table(pipeline, preset, streams, queue_count)
    sim = Simulation(ops, streams, queue_count, preset, fast_engine_ties)
    sim.run()
    return _timeline(sim, pipeline.name)


def _timeline(sim: Simulation, name: str) -> Timeline:
    preset, n = sim.preset, len(sim.ops)
    columns, serial = op_columns(sim.ops, sim.state, sim.edges)
    gap = round(preset.host_call_gap_us * 1000.0)
    issue_end = columns["issue_end"].tolist()
    return Timeline(
        **columns,
        issue_start=np.asarray([0, *(t + gap for t in issue_end[:-1])][:n], dtype=np.int64),
        stream_names=[s.name for s in sim.streams],
        engine_names=[*sim.copies.names, "Compute"],
        occupancy_time=np.asarray([t for t, _ in sim.sms.occupancy], dtype=np.int64),
        occupancy_sms=np.asarray([s for _, s in sim.sms.occupancy], dtype=np.int32),
        sm_count=preset.sm_count,
        source="simulated",
        device=preset.name,
        name=name,
        meta={
            "preset": preset.name,
            "serial_ns": serial,
            "connections": preset.connections or len(sim.streams),
        },
    )
