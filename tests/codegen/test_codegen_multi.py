"""Code export of multi-device pipelines: one host thread per device issuing its own ops, peer
copies, NCCL collectives with the right counts, cross-device event waits kept in program order;
single-device pipelines keep their single-device programs."""

from __future__ import annotations

import ast
import io
import re
import shutil
import subprocess
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from swimlanes.codegen import generate_cuda, generate_python
from swimlanes.model import Pipeline, pipeline_from_dict
from swimlanes.model.document import OP_KINDS
from swimlanes.model.op_kinds import registered_layers

NVCC = shutil.which("nvcc")
HOSTILE = 'g"0\n*/ #include <evil> \\'

#: The NCCL declarations the generated programs use, as nccl.h (NCCL 2.x) declares them: the
#: compile check needs no NCCL installed, and a call whose arguments do not match fails it.
NCCL_H = """#pragma once
#include <cuda_runtime.h>
#include <stddef.h>
typedef struct ncclComm* ncclComm_t;
typedef enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2 } ncclResult_t;
typedef enum { ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4,
               ncclUint64 = 5, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat = 7,
               ncclFloat64 = 8 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
"""


def three_gpus(dev1: str = "gpu1", comm: str = "world") -> Pipeline:
    """Three devices: every collective on a 3-device communicator, a broadcast rooted at the
    second device, an all-reduce on a pair, peer copies both ways and one inside a device,
    and a cross-device event wait."""
    devs = ["gpu0", dev1, "gpu2"]
    program: list[dict] = []
    for d in devs:
        s = f"s {d}"
        program += [
            {"op": "h2d", "stream": s, "bytes": 4096, "label": f"up {d}"},
            {"op": "kernel", "stream": s, "blocks": 8, "threads": 64, "duration_us": 5},
            {"op": "all_reduce", "stream": s, "bytes": 1 << 20, "communicator": comm},
            {"op": "reduce_scatter", "stream": s, "bytes": 3 << 20, "communicator": comm},
            {"op": "all_gather", "stream": s, "bytes": 3 << 20, "communicator": comm},
            {"op": "broadcast", "stream": s, "bytes": 4096, "communicator": comm, "root": dev1},
        ]
    program += [
        {"op": "all_reduce", "stream": "s gpu0", "bytes": 8192, "communicator": "pair"},
        {"op": "all_reduce", "stream": "s gpu2", "bytes": 8192, "communicator": "pair"},
        {"op": "peer_copy", "stream": "s gpu0", "bytes": 1 << 20, "src_device": "gpu0",
         "dst_device": dev1},
        {"op": "peer_copy", "stream": "s gpu2", "bytes": 2048, "src_device": dev1,
         "dst_device": "gpu2"},
        {"op": "peer_copy", "stream": "s gpu2", "bytes": 512},
        {"op": "event_record", "stream": "s gpu0", "event": "sent"},
        {"op": "event_wait", "stream": "s gpu2", "event": "sent"},
        {"op": "event_record", "stream": "s gpu2", "event": "local"},
        {"op": "event_wait", "stream": "s gpu2", "event": "local"},
        {"op": "device_sync", "device": dev1},
    ]  # fmt: skip
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "three gpus",
            "devices": [{"name": d} for d in devs],
            "communicators": [
                {"name": comm, "devices": devs},
                {"name": "pair", "devices": ["gpu0", "gpu2"]},
            ],
            "streams": [{"name": f"s {d}", "kind": "non_blocking", "device": d} for d in devs],
            "program": program,
        }
    )


def _functions(source: str, pattern: str) -> dict[int, str]:
    """The bodies of the generated per-device functions, by device."""
    parts = re.split(pattern, source)
    return {int(parts[k]): parts[k + 1] for k in range(1, len(parts), 2)}


def _cpp_devices(source: str) -> dict[int, str]:
    body = source.split("static void run_program()", 1)[0]
    return _functions(body, r"static void run_device_(\d+)\(\) \{")


def test_both_emitters_cover_every_kind() -> None:
    layers = registered_layers()
    assert layers["codegen_python"] == set(OP_KINDS)
    assert layers["codegen_cuda"] == set(OP_KINDS)


def test_cuda_runs_one_thread_per_device_each_issuing_its_own_ops() -> None:
    cu = generate_cuda(three_gpus())
    assert cu.isascii() and cu.count("{") == cu.count("}")
    devices = _cpp_devices(cu)
    assert sorted(devices) == [0, 1, 2]
    run = cu.split("static void run_program() {", 1)[1].split("}", 1)[0]
    assert re.findall(r"std::thread t(\d)\(run_device_\1\);", run) == [
        "0",
        "1",
        "2",
    ]
    for d, body in devices.items():
        assert body.lstrip().startswith(f"CHECK(cudaSetDevice({d}));")
        assert (
            f"cudaMemcpyAsync(d_buf0, h_pinned0, 4096, cudaMemcpyHostToDevice, stream_s_gpu{d})"
            in body
        )
        calls = Counter(re.findall(r"(nccl\w+)\(", body))
        expected = {"ncclAllReduce": 2 if d != 1 else 1, "ncclReduceScatter": 1,
                    "ncclAllGather": 1, "ncclBroadcast": 1}  # fmt: skip
        assert calls == expected, (d, calls)
    # counts: fp32 elements (per rank for reduce-scatter and all-gather), broadcast root rank 1
    assert "ncclAllReduce(coll_send, coll_recv, 262144, ncclFloat, ncclSum, comm_world[0]" in cu
    assert "ncclReduceScatter(coll_send, coll_recv, 262144, ncclFloat, ncclSum, comm_world[2]" in cu
    assert "ncclAllGather(coll_send, coll_recv, 262144, ncclFloat, comm_world[1]" in cu
    assert "ncclBroadcast(coll_send, coll_recv, 1024, ncclFloat, 1, comm_world[0]" in cu
    assert (
        "ncclAllReduce(coll_send, coll_recv, 2048, ncclFloat, ncclSum, comm_pair[1]" in devices[2]
    )
    assert cu.count("ncclCommInitAll(") == 2 and cu.count("ncclCommDestroy(") == 2
    assert "const int devices[] = {0, 2}; CHECK_NCCL(ncclCommInitAll(comm_pair, 2, devices));" in cu


def test_cuda_peer_copies_enable_peer_access_between_the_pairs_they_join() -> None:
    cu = generate_cuda(three_gpus())
    devices = _cpp_devices(cu)
    peer = "cudaMemcpyPeerAsync(g_dev[1].peer_in, 1, g_dev[0].peer_out, 0, 1048576, stream_s_gpu0)"
    assert peer in devices[0]
    assert "cudaMemcpyPeerAsync(g_dev[2].peer_in, 2, g_dev[1].peer_out, 1, 2048" in devices[2]
    # no ends given: a copy inside the stream's device
    assert "cudaMemcpyPeerAsync(g_dev[2].peer_in, 2, g_dev[2].peer_out, 2, 512" in devices[2]
    enabled = re.findall(r"    enable_peer_access\((\d), (\d)\);", cu)
    assert sorted(enabled) == [("0", "1"), ("1", "0"), ("1", "2"), ("2", "1")]
    assert "cudaDeviceEnablePeerAccess(peer, 0)" in cu


def test_a_cross_device_wait_waits_for_the_record_to_be_issued_first() -> None:
    cu = generate_cuda(three_gpus())
    devices = _cpp_devices(cu)
    record = devices[0].index("CHECK(cudaEventRecord(event_sent[0], stream_s_gpu0));")
    assert devices[0].index("g_marks[0].store(g_epoch);") > record
    wait = devices[2].index("CHECK(cudaStreamWaitEvent(stream_s_gpu2, event_sent[0], 0));")
    assert -1 < devices[2].index("while (g_marks[0].load() != g_epoch)") < wait
    # a wait on the same device's record needs no mark
    assert "CHECK(cudaStreamWaitEvent(stream_s_gpu2, event_local[2], 0));" in devices[2]
    assert cu.count("g_marks[") == 3  # declaration, store, load


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("which", ["three gpus", "random"])
def test_the_cuda_program_compiles_against_nccl_h(which: str, tmp_path: Path) -> None:
    from swimlanes.model.generators_multi import random_multi_device_pipeline

    pipeline = three_gpus() if which == "three gpus" else random_multi_device_pipeline(80, seed=3)
    (tmp_path / "nccl.h").write_text(NCCL_H)
    src = tmp_path / "pipeline.cu"
    src.write_text(generate_cuda(pipeline), encoding="ascii")
    run = subprocess.run(
        [NVCC, "-std=c++17", "-I", str(tmp_path), "-c", str(src), "-o", str(tmp_path / "p.o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr


def _py_calls(node: ast.AST) -> Counter[str]:
    out: Counter[str] = Counter()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            out[f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")] += 1
    return out


def test_python_runs_one_thread_per_device_each_issuing_its_own_ops() -> None:
    source = generate_python(three_gpus())
    compile(source, "pipeline.py", "exec")
    tree = ast.parse(source)
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert {f"run_device_{d}" for d in range(3)} <= set(funcs)
    assert "RUN_DEVICE = [run_device_0, run_device_1, run_device_2]" in source
    assert "threading.Thread(target=on_device" in source and "with cuda.gpus[ordinal]:" in source
    for d in range(3):
        calls = _py_calls(funcs[f"run_device_{d}"])
        assert calls["ncclAllReduce"] == (2 if d != 1 else 1)
        assert calls["ncclReduceScatter"] == calls["ncclAllGather"] == calls["ncclBroadcast"] == 1
        assert calls["cuMemcpyHtoDAsync"] == 1 and calls["spin_kernel"] == 0  # a subscript
    body2 = ast.get_source_segment(source, funcs["run_device_2"]) or ""
    assert body2.index("g.marks[0].wait()") < body2.index(
        "events[('event_sent', 0)].wait(streams['stream_s_gpu2'])"
    )
    assert "nccl_init_all([0, 2])" in source and "nccl_init_all([0, 1, 2])" in source
    assert _py_calls(tree)["cuMemcpyPeerAsync"] == 3
    assert "enable_peer_access(1, 2, g.contexts)" in source


def test_device_and_communicator_names_never_reach_the_code() -> None:
    # the hostile names also reach labels and stream names here, which are string literals
    # and identifiers as in any pipeline: outside literals the text must be gone
    pipeline = three_gpus(dev1=HOSTILE, comm=HOSTILE)
    cu = generate_cuda(pipeline)
    code = re.sub(r'//[^\n]*|"(?:\\.|[^"\\\n])*"', '""', cu)
    assert cu.isascii() and "evil" not in code.replace("include_evil", "")
    source = generate_python(pipeline)
    compile(source, "pipeline.py", "exec")
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if "evil>" in tok.string:
            assert tok.type == tokenize.STRING, tok


def test_single_device_pipelines_keep_the_single_device_program() -> None:
    plain = pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "program": [{"op": "kernel", "blocks": 1, "threads": 32, "duration_us": 5}],
        }
    )
    assert "std::thread" not in generate_cuda(plain) and "nccl" not in generate_cuda(plain)
    assert "threading" not in generate_python(plain)
    # a peer copy inside the one device still needs the multi-device program's buffers
    plain.program.append(plain.program[0].copy())
    plain.program[-1].op, plain.program[-1].bytes = "peer_copy", 4096
    cu = generate_cuda(plain)
    assert "std::thread t0(run_device_0);" in cu and "std::thread t1" not in cu
    assert "cudaMemcpyPeerAsync(g_dev[0].peer_in, 0, g_dev[0].peer_out, 0, 4096" in cu


@pytest.mark.parametrize("seed", range(12))
def test_random_multi_device_pipelines_export_every_op_on_its_devices_thread(seed: int) -> None:
    from swimlanes.model.generators_multi import random_multi_device_pipeline

    pipeline = random_multi_device_pipeline(80, seed=seed)
    n = len(pipeline.device_names)
    cu = generate_cuda(pipeline)
    assert cu.isascii() and cu.count("{") == cu.count("}")
    devices = _cpp_devices(cu)
    assert sorted(devices) == list(range(n))
    source = generate_python(pipeline)
    compile(source, "pipeline.py", "exec")
    funcs = {f.name: f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef)}
    for d in range(n):
        mine = [
            i
            for i, op in enumerate(pipeline.program)
            if pipeline.device_names.index(pipeline.op_device(op)) == d
        ]
        # each op's comment marks it in its own device's function, in program order
        assert re.findall(r"// \[(\d+)\]", devices[d]) == [str(i) for i in mine]
        py = ast.get_source_segment(source, funcs[f"run_device_{d}"]) or ""
        assert re.findall(r"# \[(\d+)\]", py) == [str(i) for i in mine]
        kinds = Counter(pipeline.program[i].op for i in mine)
        nccl = Counter(re.findall(r"(nccl\w+)\(", devices[d]))
        assert nccl["ncclAllReduce"] == kinds["all_reduce"]
        assert nccl["ncclBroadcast"] == kinds["broadcast"]
        assert devices[d].count("cudaMemcpyPeerAsync(") == kinds["peer_copy"]
