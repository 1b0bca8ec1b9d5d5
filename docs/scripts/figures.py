"""Print every figure the user guide quotes, from the current simulator and presets.

    .venv/bin/python docs/scripts/figures.py

The guide's numbers are simulations, so they change when the engine or a preset changes (for
example when ``resources/presets/h200.json`` is recalibrated). ``tests/test_docs.py`` fails when
a quoted makespan is stale; this script prints the figures to update the text with: each
example on its preset, each variant the tutorial draws, and the few op-level figures the
tutorial and the simulating page quote.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]  # (the guide; these scripts are not shipped with it)


def _screenshots():  # noqa: ANN202 - the make_screenshots module (its lesson list)
    spec = importlib.util.spec_from_file_location(
        "make_screenshots", DOCS / "scripts" / "make_screenshots.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_screenshots", module)
    spec.loader.exec_module(module)
    return module


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def _us(ns: float) -> str:
    return f"{ns / 1e3:.0f} us"


def examples() -> None:
    from swimlanes.analysis.insights import explain
    from swimlanes.resources import example_names, example_path
    from swimlanes.services.simulation import simulate_file
    from swimlanes.timeline.metrics import compute_metrics

    print("== examples on their presets: makespan, serial, speedup, busy %, insights")
    for name in example_names():
        pipeline, tl = simulate_file(example_path(name), None)
        m = compute_metrics(tl)
        busy = ", ".join(f"{k} {v:.1f}%" for k, v in m.engine_busy_pct.items())
        print(
            f"{name:26s} {tl.device:6s} {_ms(m.makespan_ns):>10s} serial {_ms(m.serial_ns)} "
            f"{m.speedup:.2f}x overlap {m.overlap_pct:.1f}% waited-on-host "
            f"{_ms(m.gpu_waiting_on_host_ns)} | {busy}"
        )
        for insight in explain(pipeline, tl):
            print(f"    [{insight.severity}] {insight.rule}: {insight.message}")


def variants() -> None:
    script = _screenshots()
    print("\n== variants the tutorial draws")
    for spec in script.LESSONS:
        _, device, tl = script.lesson_timeline(spec)
        print(f"{spec.name:40s} {device:6s} {_ms(tl.makespan_ns)}")
    from swimlanes.analysis.insights import reorder_issue
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    pipeline = load_pipeline(example_path("breadth-vs-depth"))
    depth = pipeline.copy()
    reorder_issue(depth, "depth")
    for device in ("h200", "k20c", "c2050", "c1060"):
        print(f"breadth-vs-depth on {device:6s} breadth {_ms(_run(pipeline, device).makespan_ns)}"
              f" depth {_ms(_run(depth, device).makespan_ns)}")  # fmt: skip


def _run(pipeline, device):  # noqa: ANN001, ANN202
    from swimlanes.engine import get_preset, simulate

    preset = device if not isinstance(device, str) else get_preset(device)
    return simulate(pipeline, preset)


def _span(tl, pipeline, label: str) -> str:  # noqa: ANN001
    i = next(k for k, op in enumerate(pipeline.program) if op.label == label)
    return f"{label}: {_us(tl.start[i])} .. {_us(tl.end[i])}"


def _without_first(pipeline, op: str, event: str | None = None):  # noqa: ANN001, ANN202
    out = pipeline.copy()
    for k, o in enumerate(out.program):
        if o.op == op and (event is None or o.event == event):
            del out.program[k]
            return out
    raise ValueError(f"no {op} to remove")


def op_figures() -> None:
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    print("\n== op-level figures")
    ex = {n: load_pipeline(example_path(n)) for n in ("two-streams", "ping-pong",
                                                      "event-dependency", "priority")}  # fmt: skip
    for device in ("c1060", "h200"):
        print(f"two-streams on {device}: {_ms(_run(ex['two-streams'], device).makespan_ns)}")
    racy = _without_first(ex["ping-pong"], "event_wait", "free A")
    tl = _run(racy, "h200")
    print("ping-pong without the first wait on 'free A':", _ms(tl.makespan_ns), "|",
          _span(tl, racy, "K frame 0 (A)"), "|", _span(tl, racy, "H2D frame 2 -> A"))  # fmt: skip
    racy = _without_first(ex["event-dependency"], "event_wait")
    tl = _run(racy, "h200")
    print("event-dependency without its first wait:", _ms(tl.makespan_ns), "|",
          _span(tl, racy, "resize+normalize 0"), "|", _span(tl, racy, "encoder 0"))  # fmt: skip
    for priority in (None, 0):
        p = ex["priority"].copy()
        if priority is not None:
            for s in p.streams:
                s.priority = priority
        tl = _run(p, "h200")
        lat = [
            tl.end[i] - tl.issue_end[i] for i, op in enumerate(p.program) if op.stream == "urgent"
        ]
        print(f"priority (urgent at {priority if priority is not None else -5}): request latency "
              f"{_us(min(lat))} .. {_us(max(lat))}")  # fmt: skip
    _example_details()
    _copy_figures()
    _false_dependency()


def _example_details() -> None:
    """Op-level figures of the shipped examples that the tutorial's prose quotes."""
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    p = load_pipeline(example_path("two-streams"))
    tl = _run(p, "h200")
    print(f"two-streams on h200: first copy starts at {tl.start[0] / 1e3:.1f} us")
    p = load_pipeline(example_path("pageable-trap"))
    tl = _run(p, "h200")
    for i in (0, 2):
        gbps = p.program[i].bytes / (tl.end[i] - tl.start[i])
        print(f"pageable-trap {p.program[i].op} of {p.program[i].bytes / 2**20:.0f} MiB: "
              f"{gbps:.1f} GB/s")  # fmt: skip
    p = load_pipeline(example_path("launch-bound"))
    tl = _run(p, "h200")
    print(f"launch-bound: idle GPU between kernels {(tl.start[1] - tl.end[0]) / 1e3:.1f} us")
    p = load_pipeline(example_path("priority"))
    for s in p.streams:
        s.priority = 0
    tl = _run(p, "h200")
    first = min(tl.start[i] for i, op in enumerate(p.program) if op.stream == "urgent")
    print(f"priority at 0: long kernel {_ms(tl.start[0])}..{_ms(tl.end[0])}, "
          f"first request starts {_ms(first)}")  # fmt: skip


def _copy_figures() -> None:
    from swimlanes.model.document import Op, Pipeline, Stream

    mib = 2**20
    three = Pipeline(
        name="three copies",
        streams=[Stream(f"s{k}", "blocking", 0) for k in (1, 2, 3)],
        program=[Op(op="h2d", stream=f"s{k}", bytes=64 * mib, label=f"s{k}") for k in (1, 2, 3)],
    )
    tl = _run(three, "h200")
    order = sorted(range(3), key=lambda i: tl.start[i])
    print("three 64 MiB H2D on s1, s2, s3 (h200):",
          ", ".join(f"{three.program[i].label} {_us(tl.start[i])}..{_us(tl.end[i])}" for i in order))  # fmt: skip
    one = Pipeline(name="one", streams=[Stream("s1", "blocking", 0)],
                   program=[Op(op="h2d", stream="s1", bytes=256 * mib)])  # fmt: skip
    both = Pipeline(name="both", streams=[Stream("s1", "blocking", 0), Stream("s2", "blocking", 0)],
                    program=[Op(op="h2d", stream="s1", bytes=256 * mib),
                             Op(op="d2h", stream="s2", bytes=256 * mib)])  # fmt: skip
    alone, pair = _run(one, "h200"), _run(both, "h200")
    gbps = 2 * 256 * mib / (max(pair.end[:2]) - min(pair.start[:2]))
    print(f"256 MiB pinned H2D alone: {_ms(alone.end[0] - alone.start[0])}; with a 256 MiB D2H: "
          f"ends {_ms(pair.end[0])} / {_ms(pair.end[1])}, {gbps:.1f} GB/s together")  # fmt: skip


def _false_dependency() -> None:
    from swimlanes.engine import get_preset
    from swimlanes.model.document import Op, Pipeline, Stream

    p = Pipeline(name="false deps", streams=[Stream(f"s{k}", "blocking", 0) for k in range(16)])
    for k in range(16):
        p.program += [
            Op(op="kernel", stream=f"s{k}", blocks=1, threads=256, duration_us=1000),
            Op(op="kernel", stream=f"s{k}", blocks=1, threads=256, duration_us=100),
        ]
    h200 = get_preset("h200")
    figures = [
        f"{c} connections {_ms(_run(p, dataclasses.replace(h200, connections=c)).makespan_ns)}"
        for c in (8, 16, 32)
    ]
    print("16 streams x (1000 us + 100 us kernel):", ", ".join(figures))


def _multi_gpu_lessons():  # noqa: ANN202 - benchmarks/make_multi_gpu_lessons.py as a module
    path = DOCS.parent / "benchmarks" / "make_multi_gpu_lessons.py"
    spec = importlib.util.spec_from_file_location("make_multi_gpu_lessons", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_multi_gpu_lessons", module)
    spec.loader.exec_module(module)
    return sys.modules["make_multi_gpu_lessons"]


def ddp_table_rows() -> list[str]:
    """docs/multi-gpu.md's table of the DDP bucket sizes on 8x-h200-nvlink, row by row."""
    lessons = _multi_gpu_lessons()
    rows = []
    for cap in lessons.BUCKET_SIZES_MB:
        f = lessons.ddp_figures(cap)
        rows.append(
            f"| {cap} MB | {f.calls} x {f.bucket_mb:.1f} MB | {_ms(f.makespan_ns)} | "
            f"{_ms(f.backward_ns)} | {_ms(f.communication_ns)} | {_ms(f.exposed_ns)} | "
            f"{_ms(f.latency_ns)} |"
        )
    return rows


def multi_gpu_figures() -> list[str]:
    """The other figures docs/multi-gpu.md quotes, one per line."""
    from swimlanes.engine import get_preset, simulate

    lessons = _multi_gpu_lessons()
    out = []
    backward = sum(round(t.backward_us, 3) for t in lessons.backward_tensors()) * 1000
    out.append(f"DDP backward pass alone: {_ms(backward)}")
    for cap in lessons.BUCKET_SIZES_MB:
        one = lessons.one_stream(lessons.ddp_pipeline(cap))
        out.append(f"DDP {cap} MB, all-reduces on the compute stream: "
                   f"{_ms(simulate(one, get_preset(lessons.DDP_DEVICE)).makespan_ns)}")  # fmt: skip
    for variant, ns in lessons.peer_figures().items():
        out.append(f"peer-copy-split {variant}: {_ms(ns)}")
    return out


def multi_gpu() -> None:
    print("\n== multi-GPU lessons (docs/multi-gpu.md)")
    print("| bucket_cap_mb | All-reduces per GPU | Step | Backward pass | All-reduce time "
          "| Exposed | Per-call latency |")  # fmt: skip
    for row in ddp_table_rows():
        print(row)
    for line in multi_gpu_figures():
        print(line)


def accuracy() -> None:
    """What `swimlanes compare` reports for each example with a shipped measurement."""
    import statistics

    from swimlanes.engine import get_preset, simulate
    from swimlanes.resources import example_names, measurements_dir
    from swimlanes.services.devices import simulation_device
    from swimlanes.timeline.compare import compare_timelines
    from swimlanes.timeline.formats.io import load_run

    print("\n== simulated vs shipped measurement (swimlanes compare)")
    errors = []
    for name in example_names():
        path = measurements_dir() / f"{name}.h200.json"
        if not path.is_file():
            continue
        measured, pipeline = load_run(path)
        device = simulation_device(None, measured)
        cmp = compare_timelines(simulate(pipeline, get_preset(device)), measured)
        data = cmp.summary_json()
        errors.append(abs(data["makespan_error_pct"]))
        print(f"| `{name}` | {data['makespan_sim_us'] / 1000:.2f} ms | "
              f"{data['makespan_measured_us'] / 1000:.2f} ms | {data['makespan_error_pct']:+.1f}% | "
              f"{data['flagged']} of {data['compared']} |")  # fmt: skip
    if errors:
        print(f"median error {statistics.median(errors):.1f}%, worst {max(errors):.1f}%")


def main() -> int:
    from swimlanes.engine import get_preset

    h200 = get_preset("h200")
    print(f"h200 preset: {h200.description}")
    for key, value in h200.to_dict().items():
        if key not in ("format", "version", "name", "description", "bandwidth_table"):
            print(f"  {key}: {value}")
    examples()
    variants()
    op_figures()
    multi_gpu()
    accuracy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
