"""Hostile documents cannot change generated code: the issue's encoding-declaration injection,
and a document whose every name and label is hostile text, in Python and in C++ (which must
compile to the same CUDA calls under -std=c++14, where trigraphs exist, and -std=c++17)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from swimlanes.codegen import generate_cuda, generate_python, python_string_literal
from swimlanes.model import Pipeline, pipeline_from_dict


def _checks() -> ModuleType:
    """tests/fuzz/codegen.py: the checks this file shares with the fuzzer."""
    path = Path(__file__).resolve().parents[1] / "fuzz" / "codegen.py"
    spec = importlib.util.spec_from_file_location("swimlanes_codegen_checks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


checks = _checks()

#: The pipeline name of the issue, and the variant whose repr holds ``\'``.
ISSUE_NAMES = [checks.ISSUE_NAME, checks.HOSTILE_PIECES[1]]
NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")


@pytest.fixture(scope="module")
def vocab():
    return checks.python_vocabulary()


def one_kernel(name: str) -> Pipeline:
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": name,
            "program": [{"op": "kernel", "blocks": 1, "threads": 32, "duration_us": 5}],
        }
    )


def hostile_document() -> Pipeline:
    """Every op kind and stream kind; every name, event name and label a different piece of
    hostile text."""
    pieces = iter(checks.HOSTILE_PIECES * 3)
    s1, s2, s3 = (f"s{i}{next(pieces)}" for i in range(3))
    e1, e2 = (f"e{i}{next(pieces)}" for i in range(2))
    program = [
        {"op": "h2d", "stream": s1, "bytes": 1 << 20},
        {"op": "d2h", "stream": s3, "bytes": 4096, "host_memory": "pageable"},
        {"op": "d2h", "bytes": 4096, "async": False},
        {"op": "d2h", "stream": s2, "bytes": 4096, "async": False},
        {"op": "kernel", "stream": s1, "blocks": 264, "threads": 256, "duration_us": 100},
        {"op": "kernel", "stream": s2, "blocks": 8, "threads": 64, "block_us": 5},
        {"op": "kernel", "blocks": 10, "threads": 128, "flops": 1e9, "bytes": 4096},
        {"op": "kernel", "stream": s3, "blocks": 1, "threads": 32, "duration_us": 5},
        {"op": "event_record", "stream": s1, "event": e1},
        {"op": "event_wait", "stream": s2, "event": e1},
        {"op": "event_record", "stream": s2, "event": e2},
        {"op": "event_wait", "event": e2},
        {"op": "memset", "stream": s2, "bytes": 100},
        {"op": "memset", "bytes": 100, "async": False},
        {"op": "d2d", "bytes": 100},
        {"op": "host_func", "stream": s2, "duration_us": 5},
        {"op": "host", "duration_us": 20},
        {"op": "malloc", "bytes": 10},
        {"op": "free"},
        {"op": "free"},
        {"op": "event_sync", "event": e1},
        {"op": "stream_sync", "stream": s2},
        {"op": "device_sync"},
    ]
    for op in program:
        op["label"] = next(pieces)
    program[3]["label"] = "what??/"  # the issue's C++ case: this op's call must survive
    program[4]["label"] = program[5]["label"] = "// tail\\"  # a repeated label is set once
    program.append({"op": "kernel", "stream": s1, "blocks": 1, "threads": 1, "block_us": 1})
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": (checks.HOSTILE_PIECES[1] + "\n" + "N" * 3000)[: checks.MAX_TEXT],
            "streams": [
                {"name": s1, "kind": "blocking", "priority": 0},
                {"name": s2, "kind": "non_blocking", "priority": -1},
                {"name": s3, "kind": "per_thread_default"},
            ],
            "program": program,
        }
    )


# -- Python -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ISSUE_NAMES)
def test_the_issues_pipeline_name_injects_nothing(name: str, vocab, tmp_path: Path) -> None:
    pipeline = one_kernel(name)
    source = generate_python(pipeline)
    path = tmp_path / "pipeline.py"
    path.write_bytes(source.encode("ascii"))
    data = path.read_bytes()
    assert tokenize.detect_encoding(io.BytesIO(data).readline)[0] == "utf-8"
    assert not any(b"coding" in line for line in data.split(b"\n")[:2])
    compile(data, str(path), "exec")  # from bytes, as `python pipeline.py` reads it
    twin = generate_python(checks.benign_twin(pipeline))
    assert checks.check_python(source, pipeline, vocab, twin) == []
    assert f"PIPELINE_NAME = {python_string_literal(name)}\n" in source


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba not installed")
def test_the_issues_scripts_run_under_the_cuda_simulator_without_injecting(
    tmp_path: Path,
) -> None:
    scripts = []
    for i, name in enumerate(ISSUE_NAMES):
        scripts.append(tmp_path / f"pipeline{i}.py")
        scripts[-1].write_text(generate_python(one_kernel(name)), encoding="ascii")
    # Run each script's module code, then its main() as far as the simulator goes (it has no
    # multiprocessor count), and report the name the script holds.
    harness = (
        "import json, runpy, sys\n"
        "for path in sys.argv[1:]:\n"
        "    g = runpy.run_path(path, run_name='generated')\n"
        "    try:\n"
        "        g['main'](1)\n"
        "        outcome = 'ran'\n"
        "    except Exception as err:\n"
        "        outcome = type(err).__name__\n"
        "    print(json.dumps([g['PIPELINE_NAME'], outcome]))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", harness, *map(str, scripts)],
        cwd=tmp_path,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    held = [json.loads(line)[0] for line in run.stdout.splitlines()]
    assert held == ISSUE_NAMES
    assert not (tmp_path / "pwned").exists()
    # and as a program, the way a user runs it
    out = subprocess.run(
        [sys.executable, str(scripts[-1]), "1"],
        cwd=tmp_path,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "SyntaxError" not in out.stderr
    assert out.returncode == 0 or "in main" in out.stderr  # it ran as far as the simulator goes
    assert not (tmp_path / "pwned").exists()


def test_a_hostile_documents_python_is_the_benign_twins_but_for_its_strings(vocab) -> None:
    pipeline = hostile_document()
    source = generate_python(pipeline)
    twin = generate_python(checks.benign_twin(pipeline))
    assert checks.check_python(source, pipeline, vocab, twin) == []


# -- C++ --------------------------------------------------------------------------------------
def _preprocess(source: str, std: str, tmp_path: Path) -> str:
    """``source`` through the C++ preprocessor under ``-std``: nvcc's where there is one, else
    g++'s with an empty stub for cuda_runtime.h (preprocessing needs no CUDA)."""
    src = tmp_path / "pipeline.cu"
    src.write_text(source, encoding="ascii")
    out = tmp_path / f"pipeline.{std}.ii"
    if NVCC:
        cmd = [NVCC, f"-std={std}", "-E", str(src), "-o", str(out)]
    else:
        stub = tmp_path / "stub"
        stub.mkdir(exist_ok=True)
        (stub / "cuda_runtime.h").write_text("")
        cmd = [GXX or "g++", f"-std={std}", "-E", "-x", "c++", "-I", str(stub), str(src)]
        cmd += ["-o", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return out.read_text(encoding="utf-8", errors="replace")


def _program_calls(preprocessed: str) -> list[str]:
    """Every call and kernel launch in run_program, in order (identifiers blanked)."""
    body = preprocessed.split("static void run_program() {", 1)[1].split("\nint main(", 1)[0]
    body = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', body)  # literals hold text, not calls
    return [m.group(1) + m.group(2) for m in re.finditer(r"([A-Za-z_]\w*)\s*(<<<|\()", body)]


@pytest.mark.skipif(NVCC is None and GXX is None, reason="no C++ compiler")
@pytest.mark.parametrize("std", ["c++14", "c++17"])
def test_a_hostile_documents_cuda_preprocesses_to_the_twins_calls(std: str, tmp_path) -> None:
    pipeline = hostile_document()
    source = generate_cuda(pipeline)
    twin = generate_cuda(checks.benign_twin(pipeline))
    assert checks.check_cuda(source, pipeline, twin) == []
    calls = _program_calls(_preprocess(source, std, tmp_path))
    assert calls == _program_calls(_preprocess(twin, std, tmp_path))
    kinds = Counter(op.op for op in pipeline.program)
    counted = Counter(calls)
    assert counted["spin_kernel<<<"] + counted["roofline_kernel<<<"] == kinds["kernel"]
    assert counted["cudaEventRecord("] == kinds["event_record"]
    assert counted["cudaStreamWaitEvent("] == kinds["event_wait"]
    assert counted["cudaLaunchHostFunc("] == kinds["host_func"]
    assert counted["cudaMemcpyAsync("] == 4 and counted["cudaMemcpy("] == 1  # h2d d2h d2d


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("std", ["c++14", "c++17"])
def test_a_hostile_documents_cuda_compiles_cleanly_with_nvcc(std: str, tmp_path: Path) -> None:
    src = tmp_path / "pipeline.cu"
    src.write_text(generate_cuda(hostile_document()), encoding="ascii")
    run = subprocess.run(
        [NVCC, f"-std={std}", "-c", str(src), "-o", str(tmp_path / "pipeline.o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "warning" not in run.stderr.lower(), run.stderr
