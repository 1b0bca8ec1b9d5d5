"""Code export of pipelines with several host threads on a device: one Python thread or
std::thread per host thread, each issuing its own ops in program order on its device, a
per-thread default stream being the thread's own cudaStreamPerThread, and cross-thread event
waits kept in program order."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from swimlanes.codegen import generate_cuda, generate_python
from swimlanes.model import Pipeline, load_pipeline, pipeline_from_dict
from swimlanes.resources import example_path

NVCC = shutil.which("nvcc")


def lesson() -> Pipeline:
    return load_pipeline(example_path("per-thread-default-stream"))


def two_devices_three_threads() -> Pipeline:
    """gpu0 with its implicit thread, gpu1 with two declared threads: a record on one of
    gpu1's threads waited for by the other, and a host op on each thread."""
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "threads",
            "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
            "host_threads": [
                {"name": "gpu0 main"},
                {"name": "a", "device": "gpu1"},
                {"name": "b", "device": "gpu1"},
            ],  # fmt: skip
            "streams": [
                {"name": "s0", "device": "gpu0"},
                {"name": "sa", "device": "gpu1", "host_thread": "a"},
                {"name": "pb", "kind": "per_thread_default", "device": "gpu1", "host_thread": "b"},
            ],  # fmt: skip
            "program": [
                {"op": "kernel", "stream": "sa", "blocks": 4, "threads": 64, "duration_us": 5},
                {"op": "event_record", "stream": "sa", "event": "done"},
                {"op": "kernel", "stream": "s0", "blocks": 4, "threads": 64, "duration_us": 5},
                {"op": "event_wait", "stream": "pb", "event": "done"},
                {"op": "kernel", "stream": "pb", "blocks": 4, "threads": 64, "duration_us": 5},
                {"op": "host", "host_thread": "b", "duration_us": 3},
                {"op": "stream_sync", "stream": "pb"},
            ],
        }
    )


def _thread_ops(pipeline: Pipeline) -> dict[int, list[int]]:
    """Each host thread's program indexes (thread_list order), as the pipeline says."""
    names = [name for name, _ in pipeline.thread_list()]
    out: dict[int, list[int]] = {t: [] for t in range(len(names))}
    for i, op in enumerate(pipeline.program):
        out[names.index(pipeline.op_thread(op))].append(i)
    return out


def _py_functions(source: str) -> dict[int, str]:
    tree = ast.parse(source)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and (
            m := re.fullmatch(r"run_thread_(\d+)", node.name)
        ):
            out[int(m.group(1))] = ast.get_source_segment(source, node) or ""
    return out


def _cpp_functions(source: str) -> dict[int, str]:
    body = source.split("static void run_program()", 1)[0]
    parts = re.split(r"static void run_thread_(\d+)\(\) \{", body)
    return {int(parts[k]): parts[k + 1] for k in range(1, len(parts), 2)}


def _indexes(body: str, comment: str) -> list[int]:
    return [int(i) for i in re.findall(rf"{comment} \[(\d+)\]", body)]


def test_python_export_of_the_lesson_runs_a_thread_per_host_thread_in_program_order() -> None:
    pipeline = lesson()
    source = generate_python(pipeline)
    compile(source, "pipeline.py", "exec")
    assert source.isascii()
    assert "RUN_THREAD = [(0, run_thread_0), (0, run_thread_1)]" in source
    assert "for d, fn in RUN_THREAD]" in source and "RUN_DEVICE" not in source
    functions = _py_functions(source)
    expected = _thread_ops(pipeline)
    assert sorted(functions) == [0, 1]
    for t, body in functions.items():
        assert _indexes(body, "#") == expected[t]
        own = f"stream_worker{t}_default"
        other = f"stream_worker{1 - t}_default"
        assert own in body and other not in body  # each issues only on its own stream
        assert re.findall(r"op_label = '(worker\d) ", body) == [f"worker{t}"] * 12
    # a per-thread default stream is Numba's handle of the calling thread's own stream
    assert "g.streams['stream_worker0_default'] = make_stream('per_thread_default', 0)" in source
    assert "return cuda.per_thread_default_stream()" in source


def test_cuda_export_of_the_lesson_runs_a_std_thread_per_host_thread() -> None:
    pipeline = lesson()
    cu = generate_cuda(pipeline)
    assert cu.isascii() and cu.count("{") == cu.count("}")
    assert "static cudaStream_t stream_worker0_default = cudaStreamPerThread;" in cu
    assert "static cudaStream_t stream_worker1_default = cudaStreamPerThread;" in cu
    run = cu.split("static void run_program() {", 1)[1].split("}", 1)[0]
    assert re.findall(r"std::thread t(\d)\(run_thread_\1\);", run) == ["0", "1"]
    assert "t0.join();" in run and "t1.join();" in run
    functions = _cpp_functions(cu)
    expected = _thread_ops(pipeline)
    for t, body in functions.items():
        assert body.lstrip().startswith("CHECK(cudaSetDevice(0));")
        assert _indexes(body, "//") == expected[t]
        assert f"stream_worker{1 - t}_default" not in body
        assert body.count("cudaStreamSynchronize(") == 1  # a sync blocks only its thread


def test_threads_of_several_devices_set_their_own_device_and_wait_for_records_in_order() -> None:
    pipeline = two_devices_three_threads()
    expected = _thread_ops(pipeline)
    assert expected == {0: [2], 1: [0, 1], 2: [3, 4, 5, 6]}
    cu = generate_cuda(pipeline)
    functions = _cpp_functions(cu)
    assert [_indexes(functions[t], "//") for t in range(3)] == [[2], [0, 1], [3, 4, 5, 6]]
    for t, device in enumerate([0, 1, 1]):
        assert functions[t].lstrip().startswith(f"CHECK(cudaSetDevice({device}));")
    # thread b waits on the host for thread a's record before its stream waits on the event
    assert "g_marks[0].store(g_epoch);" in functions[1]
    b = functions[2]
    assert (
        -1
        < b.index("while (g_marks[0].load() != g_epoch)")
        < b.index("cudaStreamWaitEvent(stream_pb, event_done[1], 0)")
    )
    assert "static cudaStream_t stream_pb = cudaStreamPerThread;" in cu
    source = generate_python(pipeline)
    compile(source, "pipeline.py", "exec")
    assert "RUN_THREAD = [(0, run_thread_0), (1, run_thread_1), (1, run_thread_2)]" in source
    body = _py_functions(source)[2]
    assert _indexes(body, "#") == [3, 4, 5, 6]
    assert body.index("g.marks[0].wait()") < body.index("events[('event_done', 1)].wait(")


def test_one_thread_per_device_keeps_its_per_device_program() -> None:
    pipeline = two_devices_three_threads()
    pipeline.host_threads = pipeline.host_threads[:2]
    for op in pipeline.program:
        op.host_thread = None
    for stream in pipeline.streams:
        stream.host_thread = None
    assert not pipeline.is_multi_thread
    source, cu = generate_python(pipeline), generate_cuda(pipeline)
    assert "RUN_DEVICE = [run_device_0, run_device_1]" in source and "RUN_THREAD" not in source
    assert "std::thread t1(run_device_1);" in cu and "run_thread_" not in cu


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("which", ["lesson", "two devices"])
def test_the_cuda_program_of_several_threads_compiles(which: str, tmp_path: Path) -> None:
    pipeline = lesson() if which == "lesson" else two_devices_three_threads()
    src = tmp_path / "pipeline.cu"
    src.write_text(generate_cuda(pipeline), encoding="ascii")
    run = subprocess.run(
        [NVCC, "-std=c++17", "-c", str(src), "-o", str(tmp_path / "p.o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr


def _error_reporting(source: str) -> dict:
    """The exported script's ``check`` and the per-thread label it names, run as Python."""
    check = source.index("def check(result):")
    labels = source.index("class Issuing(threading.local):")
    end = source.index("return issuing.op_label", labels)
    text = source[check : source.index("\n\n\ndef ", check)] + "\n\n" + source[labels:end]
    names: dict = {}
    exec("import threading\n" + text + "return issuing.op_label\n", names)  # noqa: S102
    return names


def test_a_cuda_error_names_the_op_its_own_thread_was_issuing() -> None:
    """Two host threads each set the label of the op they issue; an error in one names that
    thread's op, not the one the other thread set last."""
    source = generate_python(lesson())
    assert "global op_label" not in source
    names = _error_reporting(source)
    issuing, check = names["issuing"], names["check"]
    other_set = threading.Event()
    done = threading.Event()

    def other_thread() -> None:
        issuing.op_label = "worker1 kernel"
        other_set.set()
        done.wait(5)

    t = threading.Thread(target=other_thread)
    t.start()
    issuing.op_label = "worker0 copy"
    other_set.wait(5)
    with pytest.raises(RuntimeError, match="at the op labelled 'worker0 copy'"):
        check(700)  # CUDA_ERROR_ILLEGAL_ADDRESS, raised on this thread
    done.set()
    t.join()
