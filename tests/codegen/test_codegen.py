"""Code export: generated Python parses, generated CUDA C++ compiles, nothing can be injected."""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

from swimlanes.cli import main
from swimlanes.codegen import (
    cpp_string_literal,
    generate_cuda,
    generate_python,
    python_string_literal,
)
from swimlanes.model import Pipeline, load_pipeline, pipeline_from_dict
from swimlanes.resources import example_names, example_path

HOSTILE = 'x"""\nimport os; os.system("rm -rf /") */ #include <evil> \\'


def hostile_pipeline() -> Pipeline:
    stream = f"s1{HOSTILE}"
    event = f"e0{HOSTILE}"
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": HOSTILE,
            "streams": [
                {"name": stream, "kind": "blocking", "priority": 0},
                {"name": "s2", "kind": "non_blocking", "priority": -1},
                {"name": "pt", "kind": "per_thread_default"},
            ],
            "program": [
                {"op": "h2d", "stream": stream, "bytes": 1 << 20, "label": HOSTILE},
                {"op": "d2h", "stream": "pt", "bytes": 4096, "host_memory": "pageable"},
                {"op": "d2h", "bytes": 4096, "async": False},
                {
                    "op": "kernel",
                    "stream": stream,
                    "label": HOSTILE,
                    "blocks": 264,
                    "threads": 256,
                    "duration_us": 100,
                },
                {"op": "kernel", "stream": "s2", "blocks": 8, "threads": 64, "block_us": 5},
                {"op": "kernel", "blocks": 10, "threads": 128, "flops": 1e9, "bytes": 4096},
                {"op": "event_record", "stream": stream, "event": event},
                {"op": "event_wait", "stream": "s2", "event": event},
                {"op": "memset", "stream": "s2", "bytes": 100},
                {"op": "memset", "bytes": 100, "async": False},
                {"op": "d2d", "bytes": 100},
                {"op": "host_func", "stream": "s2", "duration_us": 5},
                {"op": "host", "duration_us": 20, "label": HOSTILE},
                {"op": "malloc", "bytes": 10},
                {"op": "free"},
                {"op": "event_sync", "event": event},
                {"op": "stream_sync", "stream": "s2"},
                {"op": "device_sync"},
            ],
        }
    )


def _called_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return names


def test_generated_python_parses_and_hostile_text_stays_in_string_literals() -> None:
    source = generate_python(hostile_pipeline())
    tree = ast.parse(source.encode("ascii"))
    assert "system" not in _called_names(tree)
    # The hostile text may only appear inside string literals: never in a comment.
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for tok in tokens:
        if "rm -rf" in tok.string:
            assert tok.type == tokenize.STRING, tok
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert HOSTILE in strings  # the name and the labels, exactly


def test_generated_python_issues_every_call_in_program_order() -> None:
    source = generate_python(hostile_pipeline())
    body = source.split("def run_program", 1)[1].split("\ndef main", 1)[0]
    expected = [
        "cuMemcpyHtoDAsync",
        "cuMemcpyDtoHAsync",
        "cuMemcpyDtoH(",
        "spin_kernel",
        "spin_kernel",
        "roofline_kernel",
        ".record(",
        ".wait(",
        "cuMemsetD8Async",
        "cuMemsetD8(",
        "cuMemcpyDtoDAsync",
        "add_callback",
        "busy_wait_us",
        "cuMemAlloc",
        "cuMemFree",
        ".synchronize()",
        ".synchronize()",
        "cuda.synchronize()",
    ]
    pos = 0
    for needle in expected:
        found = body.find(needle, pos)
        assert found >= 0, f"{needle} missing after position {pos}"
        pos = found + 1


def _cpp_code_and_comments(source: str) -> tuple[str, list[str]]:
    """The code with string literals emptied, and the comments."""
    comments: list[str] = []

    def take(m: re.Match[str]) -> str:
        if m.group(0).startswith("/"):
            comments.append(m.group(0))
            return " "
        return '""'

    code = re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', take, source, flags=re.S)
    return code, comments


def test_generated_cuda_is_well_formed() -> None:
    source = generate_cuda(hostile_pipeline())
    code, comments = _cpp_code_and_comments(source)
    assert "rm -rf" not in code and not any("rm -rf" in c for c in comments)
    assert "#include <evil>" not in code
    assert code.count("{") == code.count("}")
    assert "cudaStreamCreateWithPriority" in source
    assert "cudaStreamNonBlocking, -1" in source
    assert "cudaStreamPerThread" in source
    assert "cudaLaunchHostFunc" in source
    # the labels are string literals that set the op label CUDA errors name
    assert source.count('g_op_label = "x\\"\\"\\"\\012import os;') == 3


def test_op_labels_are_set_once_per_change_and_cleared_after_the_program() -> None:
    pipeline = pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "program": [
                {"op": "host", "duration_us": 1, "label": "a"},
                {"op": "host", "duration_us": 1, "label": "a"},
                {"op": "host", "duration_us": 1},
                {"op": "host", "duration_us": 1},
                {"op": "host", "duration_us": 1, "label": "b"},
            ],
        }
    )
    py = generate_python(pipeline).split("def run_program", 1)[1].split("\ndef main", 1)[0]
    assert re.findall(r"op_label = (.*)", py) == ["'a'", "''", "'b'", "''"]
    cu = generate_cuda(pipeline).split("run_program() {", 1)[1].split("\nint main", 1)[0]
    assert re.findall(r"g_op_label = (.*);", cu) == ['"a"', '""', '"b"', '""']


def test_codegen_covers_every_shipped_example(tmp_path: Path) -> None:
    names = example_names()
    assert names, "no shipped examples"
    for name in names:
        pipeline = load_pipeline(example_path(name))
        py = generate_python(pipeline)
        ast.parse(py.encode("ascii"))
        cu = generate_cuda(pipeline)
        assert cu.isascii() and cu.count("{") == cu.count("}"), name
        # the example's name comes back from a literal in both programs
        assert f"PIPELINE_NAME = {python_string_literal(pipeline.name)}\n" in py
        assert cpp_string_literal(json.dumps(pipeline.name)) in cu


def test_codegen_cli_writes_both_languages(tmp_path: Path) -> None:
    name = example_names()[0]
    py_out, cu_out = tmp_path / "p.py", tmp_path / "p.cu"
    assert main(["codegen", str(example_path(name)), "--lang", "python", "-o", str(py_out)]) == 0
    assert main(["codegen", str(example_path(name)), "--lang", "cuda", "-o", str(cu_out)]) == 0
    ast.parse(py_out.read_text())
    assert "int main(" in cu_out.read_text()


def test_codegen_cli_rejects_a_bad_pipeline(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "swimlanes-pipeline", "version": 1, "program": [{"op": "h2d"}]}')
    assert main(["codegen", str(bad), "--lang", "cuda", "-o", str(tmp_path / "x.cu")]) == 2
    assert "program[0].bytes" in capsys.readouterr().err
    assert not (tmp_path / "x.cu").exists()


def test_sync_copy_on_a_named_stream_is_an_async_copy_then_a_stream_sync() -> None:
    pipeline = pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "streams": [{"name": "copies", "kind": "blocking"}],
            "program": [
                {"op": "d2h", "stream": "copies", "bytes": 4096, "async": False},
                {"op": "h2d", "bytes": 4096, "async": False},
            ],
        }
    )
    py = generate_python(pipeline).split("def run_program", 1)[1]
    handle = "handles['stream_copies']"
    assert f"check(driver.cuMemcpyDtoHAsync(p.h_pinned0, p.d_buf0, 4096, {handle}))\n" in py
    assert f"    check(driver.cuStreamSynchronize({handle}))\n" in py
    # No stream: the plain synchronous cudaMemcpy.
    assert "check(driver.cuMemcpyHtoD(p.d_buf0, p.h_pinned0, 4096))\n" in py
    cu = generate_cuda(pipeline)
    assert (
        "cudaMemcpyAsync(h_pinned0, d_buf0, 4096, cudaMemcpyDeviceToHost, stream_copies)); "
        "CHECK(cudaStreamSynchronize(stream_copies));"
    ) in cu
    assert "CHECK(cudaMemcpy(d_buf0, h_pinned0, 4096, cudaMemcpyHostToDevice));" in cu
