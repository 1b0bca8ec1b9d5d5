"""Every layer covers every op kind: a new kind cannot be half added.

The op-kind registry (``swimlanes.model.op_kinds``) lists the kinds. Each layer that keeps a
per-kind table (the simulator, the executor, the code emitters, the inspector, the model's
schema) registers the kinds of that table when it is imported; this test imports
every module that registers one and checks that each layer's kinds are exactly the
registry's. The model's own derived tables (the document's tuples, ``CUDA_CALLS``, the JSON
Schema, a new op's defaults) and the validator are checked against the registry directly. CONTRIBUTING.md gives
the recipe for adding a kind.
"""

from __future__ import annotations

import copy
import importlib
import os
import re
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # the inspector layer imports Qt

from swimlanes.model import PipelineError, pipeline_from_dict  # noqa: E402
from swimlanes.model import document as doc  # noqa: E402
from swimlanes.model.op_defaults import new_ops  # noqa: E402
from swimlanes.model.op_kinds import (  # noqa: E402
    COMMON_FIELDS,
    REGISTRY,
    kinds_where,
    registered_layers,
)
from swimlanes.model.schema import OP_FIELD_SCHEMAS, pipeline_schema  # noqa: E402

APP = Path(__file__).resolve().parents[1] / "app"
KINDS = [k.name for k in REGISTRY]
#: Layers that must be registered (more may be: every registered one is checked). A layer
#: that keeps a per-kind table adds its name here when it starts registering it.
EXPECTED_LAYERS = {
    "schema", "engine", "reference", "executor", "codegen_python", "codegen_cuda",
    "inspector",
}  # fmt: skip


def _layer_modules() -> list[str]:
    """The modules under app/ that call register_layer (the registry itself aside)."""
    found = []
    for path in sorted((APP / "swimlanes").rglob("*.py")):
        if path.name == "op_kinds.py":
            continue
        if re.search(r"^\s*register_layer\(", path.read_text(encoding="utf-8"), re.M):
            found.append(".".join(path.relative_to(APP).with_suffix("").parts))
    return found


#: Layer modules that failed to import, with why (reported by a test, not at collection, so
#: that the other layers are still checked).
_IMPORT_ERRORS: dict[str, str] = {}


def _import_layers() -> dict[str, frozenset[str]]:
    for module in _layer_modules():
        try:
            importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 (any failure is reported by the test below)
            _IMPORT_ERRORS[module] = f"{type(err).__name__}: {err}"
    return registered_layers()


def test_the_layer_modules_are_found_and_import() -> None:
    modules = _layer_modules()
    assert "swimlanes.model.schema" in modules and "swimlanes.gpu.multi_executor" in modules
    _import_layers()
    assert _IMPORT_ERRORS == {}


def test_the_expected_layers_register() -> None:
    missing = EXPECTED_LAYERS - set(_import_layers())
    assert not missing, f"layers that registered no kinds: {sorted(missing)}"


@pytest.mark.parametrize("layer", sorted(_import_layers()))
def test_each_layer_covers_exactly_the_registrys_kinds(layer: str) -> None:
    kinds = registered_layers()[layer]
    missing = [k for k in KINDS if k not in kinds]
    unknown = sorted(kinds - set(KINDS))
    assert not missing, f"{layer} does not handle {', '.join(missing)}"
    assert not unknown, f"{layer} handles kinds the registry does not have: {unknown}"


def test_the_document_tuples_are_the_registrys() -> None:
    assert list(doc.OP_KINDS) == KINDS
    assert set(doc.STREAM_OPS) | set(doc.HOST_OPS) == set(KINDS)
    assert not set(doc.STREAM_OPS) & set(doc.HOST_OPS)
    assert list(doc.STREAM_OPS) == list(kinds_where(on_stream=True))
    assert set(doc.MULTI_DEVICE_OPS) == set(kinds_where(multi_device=True))
    for group in (doc.COPY_OPS, doc.HOST_COPY_OPS, doc.EVENT_OPS, doc.COLLECTIVE_OPS):
        assert set(group) <= set(KINDS)
    assert set(doc.CUDA_CALLS) == set(KINDS) and all(doc.CUDA_CALLS.values())


def test_every_kind_has_a_title_a_colour_and_help() -> None:
    for spec in REGISTRY:
        assert spec.title and spec.help and spec.category, spec.name
        assert re.fullmatch(r"#[0-9A-Fa-f]{6}", spec.colour), spec.name


def test_every_kind_has_one_place_in_the_palette() -> None:
    from swimlanes.model.op_kinds import PALETTE_ORDER

    assert sorted(PALETTE_ORDER) == sorted(KINDS)


def test_the_schema_has_a_branch_per_kind_with_the_registrys_keys() -> None:
    schema = pipeline_schema()
    assert schema["$defs"]["op"]["properties"]["op"]["enum"] == KINDS
    for spec in REGISTRY:
        branch = schema["$defs"][f"op_{spec.name}"]
        taken = {k for k, v in branch["properties"].items() if v is not False} - {"op"}
        # (host_thread: every op is issued by some host thread, whatever its kind)
        assert taken == {*spec.fields, *COMMON_FIELDS, "host_thread"}, spec.name
        assert set(branch["required"]) - {"op"} == set(spec.required), spec.name
    every_key = {key for spec in REGISTRY for key in spec.fields}
    assert every_key <= OP_FIELD_SCHEMAS.keys()


# -- the validator: a new op of each kind loads; missing required and foreign keys are refused --
def _two_devices() -> dict[str, Any]:
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "streams": [{"name": "s0", "device": "gpu0"}, {"name": "s1", "device": "gpu1"}],
        "program": [{"op": "event_record", "stream": "s0", "event": "e0"}],
        "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
        "communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]}],
    }


def _with_new_ops(kind: str) -> dict[str, Any]:
    data = _two_devices()
    ops = new_ops(kind, pipeline_from_dict(copy.deepcopy(data)), "s1", 1)
    data["program"] += [op.to_dict() for op in ops]
    return data


def _loads(data: dict[str, Any]) -> bool:
    try:
        pipeline_from_dict(data)
    except PipelineError:
        return False
    return True


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_op_of_each_kind_is_valid(kind: str) -> None:
    data = _with_new_ops(kind)
    pipeline = pipeline_from_dict(copy.deepcopy(data))
    assert [op.to_dict() for op in pipeline.program] == data["program"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_validator_requires_and_refuses_the_registrys_keys(kind: str) -> None:
    spec = next(s for s in REGISTRY if s.name == kind)
    base = _with_new_ops(kind)
    for key in spec.required:
        data = copy.deepcopy(base)
        for op in data["program"][1:]:
            op.pop(key, None)
        assert not _loads(data), f"{kind} without {key} was accepted"
    foreign = {"stream": "s1", "host_memory": "pinned", "async": True, "blocks": 1, "threads": 1,
               "event": "e0", "device": "gpu1", "src_device": "gpu1", "dst_device": "gpu1",
               "communicator": "world", "root": "gpu1"}  # fmt: skip
    for key, value in foreign.items():
        if key in spec.fields or key in COMMON_FIELDS:
            continue
        data = copy.deepcopy(base)
        data["program"][-1][key] = value
        assert not _loads(data), f"{kind} with {key} was accepted"
