"""Insight rules on hand-built schedules: each fires on its trap and stays quiet otherwise."""

from __future__ import annotations

import json

import pytest

from swimlanes.analysis.insights import RULES, Insight, explain
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.timeline.timeline import NO_TIME, Timeline, TimelineBuilder

US = 1000
ENGINE = {"h2d": "H2D", "d2h": "D2H", "kernel": "Compute", "memset": "Compute", "d2d": "Compute"}


def schedule(pipeline: Pipeline, spans, deps=(), *, source="simulated", meta=None) -> Timeline:
    """A timeline for ``pipeline``: spans[i] = (issue_start, issue_end, start, end) in us, with
    None for no device span; deps = (src, dst, kind) program indexes."""
    b = TimelineBuilder([s.name for s in pipeline.all_streams], ["H2D", "Compute", "D2H"])
    for i, (op, (i0, i1, s, e)) in enumerate(zip(pipeline.program, spans, strict=True)):
        b.add(
            index=i,
            kind=op.op,
            stream=op.stream_name,
            engine=ENGINE.get(op.op) if s is not None else None,
            issue_start=i0 * US,
            issue_end=i1 * US,
            start=NO_TIME if s is None else int(s * US),
            end=NO_TIME if e is None else int(e * US),
            nbytes=op.bytes or 0,
            label=op.display_label,
        )
    for src, dst, kind in deps:
        b.add_dep(src, dst, kind)
    return b.build(source=source, device="handmade", meta=meta or {})


def rules(insights: list[Insight]) -> list[str]:
    return [i.rule for i in insights]


def by_rule(insights: list[Insight], rule: str) -> Insight:
    hits = [i for i in insights if i.rule == rule]
    assert len(hits) == 1, rules(insights)
    return hits[0]


def streams(*names: str, kind: str = "blocking") -> list[Stream]:
    return [Stream(n, kind) for n in names]


MB64 = 64 << 20


def chunk_program(memory: str) -> Pipeline:
    prog = []
    for c, s in enumerate(("s1", "s2")):
        prog += [
            Op("h2d", s, f"H2D {c}", bytes=MB64, host_memory=memory),
            Op("kernel", s, f"K {c}", blocks=1024, threads=256, duration_us=1000),
            Op("d2h", s, f"D2H {c}", bytes=MB64, host_memory=memory),
        ]
    return Pipeline("chunks", streams("s1", "s2"), [*prog, Op("device_sync")])


def test_pageable_copies_blocking_the_host_are_a_problem():
    # 64 MiB staged at ~11 GB/s: each H2D holds the host ~6 ms, each D2H until it is done
    spans = [
        (0, 6000, 10, 6000),
        (6000, 6012, 6010, 7010),
        (6012, 11000, 7010, 11000),
        (11000, 17000, 11010, 17000),
        (17000, 17012, 17010, 18010),
        (17012, 22000, 18010, 22000),
        (22000, 22003, None, None),
    ]
    p = chunk_program("pageable")
    found = explain(p, schedule(p, spans))
    ins = by_rule(found, "pageable_copy")
    assert ins.severity == "problem"
    assert ins.op_indexes == (0, 2, 3, 5)
    assert "GB/s" in ins.message and "pinned" in ins.advice
    assert "blocked" in ins.message
    assert found[0].severity == "problem"


def test_pinned_copies_raise_no_pageable_or_sync_insight():
    p = chunk_program("pinned")
    spans = [
        (0, 9, 9, 1230),
        (9, 21, 1235, 2235),
        (21, 30, 2235, 3455),
        (30, 39, 1230, 2450),
        (39, 51, 2450, 3450),
        (51, 60, 3455, 4675),
        (60, 4676, None, None),
    ]
    found = explain(
        p,
        schedule(
            p, spans, [(0, 1, "stream"), (1, 2, "stream"), (3, 4, "stream"), (4, 5, "stream")]
        ),
    )
    assert not {"pageable_copy", "sync_copy", "legacy_default_serialises"} & set(rules(found))
    assert all(i.severity != "problem" for i in found)


def test_sync_copy_in_the_middle_of_the_program_is_reported():
    p = Pipeline(
        "sync",
        streams("s1"),
        [
            Op("h2d", "s1", "H2D in", bytes=MB64, is_async=False),
            Op("kernel", "s1", "K", blocks=1024, threads=256, duration_us=1000),
            Op("d2h", "s1", "D2H out", bytes=MB64, is_async=False),
        ],
    )
    spans = [(0, 1230, 9, 1230), (1230, 1242, 1246, 2246), (1242, 3470, 2250, 3470)]
    found = explain(p, schedule(p, spans, [(0, 1, "stream"), (1, 2, "stream")]))
    ins = by_rule(found, "sync_copy")
    # the final D2H fetches the result: blocking there costs nothing, so only the H2D counts
    assert ins.op_indexes == (0,)
    assert "1.23 ms" in ins.message


def test_trailing_sync_copy_is_not_reported():
    p = Pipeline(
        "fetch",
        streams("s1"),
        [
            Op("kernel", "s1", "K", blocks=1024, threads=256, duration_us=1000),
            Op("d2h", "s1", "D2H out", bytes=MB64, is_async=False),
        ],
    )
    spans = [(0, 12, 16, 1016), (12, 2240, 1020, 2240)]
    assert "sync_copy" not in rules(explain(p, schedule(p, spans)))


def default_trap(kind: str) -> Pipeline:
    return Pipeline(
        "trap",
        streams("s1", "s2", kind=kind),
        [
            Op("kernel", "s1", "K a", blocks=1024, threads=256, duration_us=1000),
            Op("kernel", "default", "bookkeeping", blocks=1, threads=32, duration_us=5),
            Op("kernel", "s2", "K b", blocks=1024, threads=256, duration_us=1000),
        ],
    )


def test_legacy_default_stream_names_who_waited():
    p = default_trap("blocking")
    spans = [(0, 12, 16, 1016), (12, 24, 1016, 1021), (24, 36, 1021, 2021)]
    deps = [(0, 1, "default_stream"), (1, 2, "default_stream")]
    ins = by_rule(explain(p, schedule(p, spans, deps)), "legacy_default_serialises")
    assert ins.op_indexes == (0, 1, 2)
    assert "'bookkeeping' on default (#1)" in ins.message
    assert "waited for 'K a' on s1 (#0)" in ins.message
    assert "'K b' on s2 (#2) waited for it" in ins.message
    assert "cudaStreamNonBlocking" in ins.advice


def test_non_blocking_streams_are_exempt_from_the_default_stream():
    p = default_trap("non_blocking")
    spans = [(0, 12, 16, 1016), (12, 24, 28, 33), (24, 36, 40, 1040)]
    assert "legacy_default_serialises" not in rules(explain(p, schedule(p, spans)))


def many_streams() -> Pipeline:
    names = [f"s{i}" for i in range(10)]
    prog = [Op("kernel", s, f"K {s}", blocks=132, threads=1024, duration_us=1000) for s in names]
    return Pipeline("many", streams(*names), prog)


def test_false_dependency_from_shared_hardware_queue():
    p = many_streams()
    # s8 shares s0's queue and s9 s1's: held until the ops ahead of them finished
    spans = [(12 * i, 12 * i + 12, 12 * i + 16, 12 * i + 1016) for i in range(8)]
    spans += [(96, 108, 1016, 2016), (108, 120, 1028, 2028)]
    deps = [(0, 8, "queue"), (1, 9, "queue")]
    ins = by_rule(explain(p, schedule(p, spans, deps, meta={"connections": 8})), "false_dependency")
    assert ins.op_indexes == (8, 9)
    assert "10 streams" in ins.message and "8 hardware queues" in ins.message
    assert "CUDA_DEVICE_MAX_CONNECTIONS=32" in ins.advice
    assert ins.severity == "problem"  # 1.8 ms lost in a 2 ms run


def test_queue_deps_that_cost_nothing_are_quiet():
    p = many_streams()
    # on the GPU 4 us after issue: the recorded queue dep held nothing back
    spans = [(12 * i, 12 * i + 12, 12 * i + 16, 12 * i + 1016) for i in range(10)]
    found = explain(p, schedule(p, spans, [(0, 8, "queue")], meta={"connections": 8}))
    assert "false_dependency" not in rules(found)


def test_host_sync_in_the_issue_loop_holds_back_other_streams():
    p = Pipeline(
        "sync in the middle",
        streams("s1", "s2"),
        [
            Op("kernel", "s1", "K a", blocks=1024, threads=256, duration_us=5000),
            Op("stream_sync", "s1"),
            Op("kernel", "s2", "K b", blocks=1024, threads=256, duration_us=5000),
        ],
    )
    spans = [(0, 12, 16, 5016), (12, 5018, None, None), (5018, 5030, 5034, 10034)]
    ins = by_rule(explain(p, schedule(p, spans, [(0, 1, "host")])), "breadth_first_blocking")
    assert ins.op_indexes == (1, 2)
    assert "'K b' on s2 (#2)" in ins.message
    assert "5.01 ms" in ins.message  # K b could have been issued when the sync began


def test_idle_engine_gap_names_what_the_next_op_waited_for():
    p = Pipeline(
        "gap",
        streams("s1", "s2"),
        [
            Op("h2d", "s1", "H2D a", bytes=MB64),
            Op("kernel", "s1", "K a", blocks=1024, threads=256, duration_us=5000),
            Op("h2d", "s1", "H2D b", bytes=MB64),
            Op("kernel", "s2", "K other", blocks=1024, threads=256, duration_us=5000),
        ],
    )
    spans = [(0, 9, 9, 1230), (9, 21, 1230, 6230), (21, 30, 6230, 7450), (30, 42, 46, 5046)]
    found = explain(p, schedule(p, spans, [(0, 1, "stream"), (1, 2, "stream")]))
    ins = by_rule(found, "idle_engine_gap")
    assert ins.title.startswith("H2D engine idle for 5.00 ms")
    assert "waited for 'K a' on s1 (#1) (stream order)" in ins.message
    assert ins.severity == "warning"  # 5 ms of a 7.45 ms run


def test_launch_bound_kernels():
    n = 60
    p = Pipeline(
        "tiny",
        streams("s1"),
        [Op("kernel", "s1", f"tiny {i}", blocks=32, threads=128, duration_us=2) for i in range(n)],
    )
    spans = [(12 * i, 12 * i + 12, 12 * i + 16, 12 * i + 18) for i in range(n)]
    deps = [(i, i + 1, "stream") for i in range(n - 1)]
    ins = by_rule(explain(p, schedule(p, spans, deps)), "launch_bound")
    assert ins.severity == "problem"
    assert ins.op_indexes == tuple(range(n))
    assert "83,333 launches/s" in ins.message
    assert "CUDA Graph" in ins.advice


def test_few_long_kernels_are_not_launch_bound():
    p = Pipeline(
        "big",
        streams("s1"),
        [
            Op("kernel", "s1", f"K {i}", blocks=1024, threads=256, duration_us=500)
            for i in range(30)
        ],
    )
    spans = [(12 * i, 12 * i + 12, 16 + 500 * i, 516 + 500 * i) for i in range(30)]
    assert "launch_bound" not in rules(explain(p, schedule(p, spans)))


def serial_program() -> Pipeline:
    return Pipeline(
        "serial",
        streams("s1"),
        [
            Op("h2d", "s1", "H2D", bytes=MB64),
            Op("kernel", "s1", "K", blocks=1024, threads=256, duration_us=1000),
            Op("d2h", "s1", "D2H", bytes=MB64),
        ],
    )


def test_no_overlap_on_a_single_stream():
    p = serial_program()
    spans = [(0, 9, 9, 1230), (9, 21, 1230, 2230), (21, 30, 2230, 3450)]
    ins = by_rule(explain(p, schedule(p, spans)), "no_overlap")
    assert "stream s1" in ins.message and "chunks" in ins.advice
    assert ins.op_indexes == (0, 1, 2)


def test_overlapping_copies_and_kernels_are_fine():
    p = chunk_program("pinned")
    spans = [
        (0, 9, 9, 1230),
        (9, 21, 1235, 2235),
        (21, 30, 2235, 3455),
        (30, 39, 1230, 2450),
        (39, 51, 2450, 3450),
        (51, 60, 3455, 4675),
        (60, 4676, None, None),
    ]
    assert "no_overlap" not in rules(explain(p, schedule(p, spans)))


def test_model_disagreement_explains_slow_copies():
    p = serial_program()
    sim = schedule(p, [(0, 9, 9, 1230), (9, 21, 1230, 2230), (21, 30, 2230, 3450)])
    meas = schedule(
        p, [(0, 9, 9, 2700), (9, 21, 2700, 3700), (21, 30, 3700, 6400)], source="measured"
    )
    ins = by_rule(explain(p, sim, measured=meas), "model_disagrees")
    assert ins.severity == "warning"
    assert ins.op_indexes == (0, 1, 2)  # the kernel is placed late by the slow H2D
    assert "1 H2D copy ran at 24.9 GB/s on the GPU but at 55.0 GB/s in the model" in ins.message
    assert "calibrate" in ins.advice


def test_model_agreeing_with_measurement_is_quiet():
    p = serial_program()
    spans = [(0, 9, 9, 1230), (9, 21, 1230, 2230), (21, 30, 2230, 3450)]
    found = explain(p, schedule(p, spans), measured=schedule(p, spans, source="measured"))
    assert "model_disagrees" not in rules(found)


def test_insights_are_json_and_severities_checked():
    p = serial_program()
    spans = [(0, 9, 9, 1230), (9, 21, 1230, 2230), (21, 30, 2230, 3450)]
    for ins in explain(p, schedule(p, spans)):
        data = json.loads(json.dumps(ins.to_json()))
        assert data["rule"] in {r.__name__ for r in RULES}
        assert data["message"] and data["advice"]
    with pytest.raises(ValueError, match="severity"):
        Insight("x", "fatal", "t", "m", "a")


def test_empty_pipeline_has_no_insights():
    p = Pipeline("empty", [], [])
    assert explain(p, schedule(p, [])) == []


# -- on the engine's schedules of the shipped examples ----------------------------------------
def simulated_insights(pipeline: Pipeline, device: str) -> list[Insight]:
    from swimlanes.engine import simulate

    return explain(pipeline, simulate(pipeline, device))


def example(name: str) -> Pipeline:
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    return load_pipeline(example_path(name))


@pytest.mark.parametrize(
    ("name", "device", "rule"),
    [
        ("default-stream-trap", "h200", "legacy_default_serialises"),
        ("pageable-trap", "h200", "pageable_copy"),
        ("launch-bound", "h200", "launch_bound"),
        ("swimming-in-streams-sync", "h200", "sync_copy"),
        ("breadth-vs-depth", "c2050", "breadth_first_blocking"),
    ],
)
def test_each_trap_example_produces_its_insight(name, device, rule):
    found = simulated_insights(example(name), device)
    ins = by_rule(found, rule)
    assert ins.severity == "problem", ins.message
    assert found[0].rule == rule  # the trap is the first thing the user reads
    assert ins.op_indexes


def test_trap_insights_point_at_the_culprits():
    trap = example("default-stream-trap")
    ins = by_rule(simulated_insights(trap, "h200"), "legacy_default_serialises")
    on_default = {i for i, op in enumerate(trap.program) if op.stream_name == "default"}
    assert on_default and on_default <= set(ins.op_indexes)
    assert ins.estimated_saving_ns and ins.estimated_saving_ns > 0  # what-if: non-blocking

    pageable = example("pageable-trap")
    ins = by_rule(simulated_insights(pageable, "h200"), "pageable_copy")
    copies = {i for i, op in enumerate(pageable.program) if op.op in ("h2d", "d2h")}
    assert set(ins.op_indexes) == copies
    assert ins.estimated_saving_ns and ins.estimated_saving_ns > 0  # what-if: pinned

    tiny = example("launch-bound")
    ins = by_rule(simulated_insights(tiny, "h200"), "launch_bound")
    kernels = sum(op.op == "kernel" for op in tiny.program)
    assert len(ins.op_indexes) == kernels
    assert "launches/s" in ins.message
    # with free launches only the kernels' own time remains: most of the run is saved
    assert ins.estimated_saving_ns and ins.estimated_saving_ns > 0.5 * 4_000_000


@pytest.mark.parametrize(
    ("name", "device"),
    [
        ("chunked-overlap", "ideal"),
        ("chunked-overlap", "h200"),
        ("two-streams", "ideal"),
        ("swimming-in-streams", "h200"),
        ("breadth-vs-depth", "h200"),
        ("event-dependency", "h200"),
        ("ping-pong", "h200"),
        ("priority", "h200"),
    ],
)
def test_well_designed_examples_have_no_problem(name, device):
    found = simulated_insights(example(name), device)
    assert [i.title for i in found if i.severity == "problem"] == []
    assert "sync_copy" not in rules(found) and "pageable_copy" not in rules(found)


def test_no_false_dependency_when_a_queue_is_free_on_h200():
    """s0's kernel holds its queue (it waits for a 10 ms copy), the kernels of s1 to s7 run at
    once: s8's kernel finds a free queue and runs, as on the H100 and H200 hosts measured
    (before, the model put it behind K0 for 10 ms)."""
    names = [f"s{i}" for i in range(9)]
    prog = [
        Op("h2d", "s0", "H2D big", bytes=550_000_000),
        Op("kernel", "s0", "K0", blocks=132, threads=256, duration_us=5000),
        *(Op("kernel", s, f"K {s}", blocks=132, threads=256, duration_us=100) for s in names[1:8]),
        Op("kernel", "s8", "K s8", blocks=132, threads=256, duration_us=5000),
        Op("d2h", "s8", "D2H s8", bytes=275_000_000),
    ]
    found = simulated_insights(Pipeline("aliasing", streams(*names), prog), "h200")
    assert not [i for i in found if i.rule == "false_dependency"]


def test_false_dependency_on_h200_with_a_ninth_stream():
    # Every one of the 8 queues holds a kernel waiting for its stream's copy when s8's kernel
    # reaches the GPU, so it joins the first (s0's): it waits behind K0, which waits for a
    # 10 ms copy. (With a queue free, it would take that one: the h200 preset's queue
    # choice, as the H100 and H200 hosts measured.)
    names = [f"s{i}" for i in range(9)]
    prog = [
        Op("h2d", "s0", "H2D big", bytes=550_000_000),
        Op("kernel", "s0", "K0", blocks=132, threads=256, duration_us=5000),
    ]
    for s in names[1:8]:
        prog += [
            Op("h2d", s, f"H2D {s}", bytes=4_000_000),
            Op("kernel", s, f"K {s}", blocks=132, threads=256, duration_us=100),
        ]
    prog += [
        Op("kernel", "s8", "K s8", blocks=132, threads=256, duration_us=5000),
        Op("d2h", "s8", "D2H s8", bytes=275_000_000),
    ]
    found = simulated_insights(Pipeline("aliasing", streams(*names), prog), "h200")
    ins = by_rule(found, "false_dependency")
    assert ins.op_indexes == (16,)
    assert ins.severity == "problem"
    assert ins.estimated_saving_ns and ins.estimated_saving_ns > 3_000_000  # 32 connections


def test_model_disagreement_against_a_slower_machine():
    import dataclasses

    from swimlanes.engine import get_preset, simulate

    p = serial_program()
    h200 = get_preset("h200")
    slow_pcie = dataclasses.replace(
        h200, h2d_pinned_gbps=25.0, d2h_pinned_gbps=25.0, bandwidth_table={}
    )
    sim = simulate(p, dataclasses.replace(h200, bandwidth_table={}))
    meas = dataclasses.replace(simulate(p, slow_pcie), source="measured")
    ins = by_rule(explain(p, sim, measured=meas), "model_disagrees")
    assert ins.severity == "warning"
    assert "1 H2D copy ran at 25.0 GB/s on the GPU" in ins.message


def test_sync_in_issue_loop_on_the_engine_estimates_hoisting():
    p = Pipeline(
        "sync first",
        streams("s1", "s2"),
        [
            Op("kernel", "s1", "K a", blocks=8, threads=256, duration_us=5000),
            Op("stream_sync", "s1"),
            Op("kernel", "s2", "K b", blocks=8, threads=256, duration_us=5000),
        ],
    )
    ins = by_rule(simulated_insights(p, "h200"), "breadth_first_blocking")
    assert ins.op_indexes == (1, 2)
    assert ins.severity == "problem"
    # issued before the sync, K b runs beside K a: about 5 ms of a 10 ms run saved
    assert 4_500_000 < (ins.estimated_saving_ns or 0) < 5_100_000


def test_fermi_issue_order_names_the_better_order():
    ins = by_rule(
        simulated_insights(example("breadth-vs-depth"), "c2050"), "breadth_first_blocking"
    )
    assert "Issued depth-first, the model predicts" in ins.message
    assert ins.advice.startswith("Issue the work depth-first.")
    assert ins.estimated_saving_ns and ins.estimated_saving_ns > 0


def test_reorder_issue_keeps_host_calls_and_event_runs_in_place():
    from swimlanes.analysis.insights import reorder_issue

    prog = [
        Op("h2d", "s1", "H1", bytes=1),
        Op("h2d", "s2", "H2", bytes=1),
        Op("kernel", "s1", "K1", blocks=1, threads=32, duration_us=1),
        Op("kernel", "s2", "K2", blocks=1, threads=32, duration_us=1),
        Op("device_sync"),
        Op("kernel", "s1", "K3", blocks=1, threads=32, duration_us=1),
        Op("event_record", "s1", event="e"),
        Op("event_wait", "s2", event="e"),
        Op("kernel", "s2", "K4", blocks=1, threads=32, duration_us=1),
    ]
    p = Pipeline("mixed", streams("s1", "s2"), list(prog))
    reorder_issue(p, "depth")
    assert [op.display_label for op in p.program[:5]] == ["H1", "K1", "H2", "K2", "device sync"]
    assert p.program[5:] == prog[5:]  # a run with events keeps its order
    reorder_issue(p, "breadth")
    assert [op.display_label for op in p.program[:4]] == ["H1", "H2", "K1", "K2"]


def test_a_measured_timeline_without_dependencies_is_explained_too():
    from swimlanes.engine import simulate

    p = example("pageable-trap")
    sim = simulate(p, "h200")
    # what an executor returns: same rows and times, no dependency edges, no preset
    measured = Timeline(
        **{
            name: getattr(sim, name)
            for name in (
                "index",
                "kind",
                "stream",
                "engine",
                "issue_start",
                "issue_end",
                "start",
                "end",
                "solo_ns",
                "bytes",
                "labels",
                "stream_names",
                "engine_names",
            )
        },
        source="measured",
        device="NVIDIA H200",
    )
    ins = by_rule(explain(p, measured), "pageable_copy")
    assert ins.severity == "problem"
    assert ins.estimated_saving_ns is None  # no model to ask


def test_idle_engine_gap_blames_host_work_on_the_issuing_thread():
    p = Pipeline(
        "host work",
        streams("s1", "s2"),
        [
            Op("h2d", "s1", "H2D a", bytes=MB64),
            Op("kernel", "s1", "K a", blocks=1024, threads=256, duration_us=8000),
            Op("host", label="prepare batch 2", duration_us=6000),
            Op("h2d", "s2", "H2D b", bytes=MB64),
            Op("kernel", "s2", "K b", blocks=1024, threads=256, duration_us=8000),
        ],
    )
    ins = by_rule(simulated_insights(p, "h200"), "idle_engine_gap")
    assert ins.title.startswith("H2D engine idle")
    assert "busy in 'prepare batch 2' (#2) (CPU work on the issuing thread)" in ins.message
    assert ins.op_indexes == (3,)


def test_an_insight_reports_no_saving_when_the_fix_would_not_shorten_the_run() -> None:
    from swimlanes.analysis.insight_context import Insight

    kwargs = {"rule": "r", "severity": "info", "title": "t", "message": "m", "advice": "a"}
    assert Insight(**kwargs, estimated_saving_ns=0).estimated_saving_ns is None
    assert Insight(**kwargs, estimated_saving_ns=-5).estimated_saving_ns is None
    assert Insight(**kwargs, estimated_saving_ns=1200).estimated_saving_ns == 1200
