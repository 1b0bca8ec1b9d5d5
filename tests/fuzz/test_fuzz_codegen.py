"""Code export under a seeded fuzzer: hostile names and labels on random pipelines never change
the generated code beyond its string literals (see codegen.py beside this file)."""

from __future__ import annotations

import random

import pytest

from codegen import (  # tests/fuzz is on sys.path (no package)
    check_cuda,
    check_python,
    fuzz_codegen,
    hostile_pipeline,
    python_vocabulary,
)
from swimlanes.codegen import generate_cuda, generate_python


@pytest.fixture(scope="module")
def vocab():
    return python_vocabulary()


def test_fuzzed_hostile_pipelines_generate_safe_code(vocab) -> None:
    report = fuzz_codegen(60, seed=20240601, vocab=vocab, n_ops=12)
    assert report.failures == []


def test_the_fuzzer_is_deterministic_in_its_seed() -> None:
    a, _ = hostile_pipeline(random.Random(3))
    b, _ = hostile_pipeline(random.Random(3))
    assert a.to_dict() == b.to_dict()
    c, _ = hostile_pipeline(random.Random(4))
    assert c.to_dict() != a.to_dict()


def test_the_checks_catch_what_they_look_for(vocab) -> None:
    """The checks are not vacuous: each fails on code that does what it guards against."""
    bad, twin = hostile_pipeline(random.Random(11))
    py, py_twin = generate_python(bad), generate_python(twin)
    assert check_python(py, bad, vocab, py_twin) == []
    lines = py.split("\n")
    cookie = "\n".join([lines[0], "# -*- coding: latin-1 -*-", *lines[2:]])
    assert any("encoding" in p for p in check_python(cookie, bad, vocab, py_twin))
    call = py.replace("    cuda.synchronize()\n", "    __import__('os').system('x')\n", 1)
    problems = check_python(call, bad, vocab, py_twin)
    assert any("vocabulary" in p for p in problems)
    assert any("forbidden" in p for p in problems)
    comment = py.replace("    # [0] ", "    # [0] evil ", 1)
    assert any("comments" in p for p in check_python(comment, bad, vocab, py_twin))

    cu, cu_twin = generate_cuda(bad), generate_cuda(twin)
    assert check_cuda(cu, bad, cu_twin) == []
    trigraph = cu.replace('g_op_label = "', 'g_op_label = "??/', 1)
    assert any("trigraph" in p for p in check_cuda(trigraph, bad, cu_twin))
    swallowed = cu.replace("    // [0] ", "    // [0] tail\\\n", 1)
    problems = check_cuda(swallowed, bad, cu_twin)
    assert any("comments" in p for p in problems) and any("splices" in p for p in problems)
