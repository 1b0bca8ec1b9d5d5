#!/usr/bin/env bash
# Everything the GPU machine runs, in one go: `bash tests/gpu/run_on_device.sh [STAGES]`.
# STAGES (comma-separated, default all but fidelity, capture and multi): nvtx, tests, calibrate,
# quick, capture, examples, accuracy, bench, fidelity, multi. The multi stage (a machine of
# several GPUs) checks the NCCL binding (the library the executor loads, and whether nccl4py
# imports), runs the multi-GPU tests, calibrates the links (--links) and packs the figures
# with the GPUs, host and date into $OUT/links.json (tests/gpu/multi/ keeps one per machine),
# then runs the single-GPU tests for at most MULTI_TESTS_SECONDS (default 120). The fidelity stage (benchmarks/fidelity/README.md) calibrates, then measures
# FID_COUNT (default 160; 40 with FID_DEVICES) generated random pipelines (on FID_DEVICES GPUs,
# benchmarks/fidelity/generate_multi.py, when set above 1) with --repeat 5 in one process, and packs
# the preset, the raw calibration, the host's description and the runs into $OUT/fidelity.tgz.
# The GPU machine's own numpy breaks numba-cuda's compiler and it has no package index, so the
# wheels this needs sit in .whl/ (numpy 2.4.6, cupti-python 13.0.1, pyelftools; cp312) and are
# installed into /tmp/site. Logs, the preset, the raw calibration, the measured runs (runs.tgz),
# the accuracy table and the benchmark lines are written under $OUT.
set -u
STAGES="${1:-nvtx,tests,calibrate,quick,examples,accuracy,bench}"  # fidelity only when named
OUT="${OUT:-/tmp/swimlanes-out}"
REPEAT="${REPEAT:-7}"
mkdir -p "$OUT" "$OUT/runs"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:app
export PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast must stay off on shared multi-GPU hosts
PY=python3
SW="$PY -m swimlanes"
has() { [[ ",$STAGES," == *",$1,"* ]]; }
log() { echo "== $(date -u +%H:%M:%S) $*"; }

{
log "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
$PY -c "import numba, numba.cuda, numpy, cuda.bindings; print(numba.__version__, numba.cuda.__file__, numpy.__version__, cuda.bindings.__version__)"

if has multi; then
    log "multi: GPUs and links"
    nvidia-smi topo -m 2>&1 | head -12
    $PY -c "import torch; print('torch sees', torch.cuda.device_count(), 'GPUs; torch NCCL', torch.cuda.nccl.version())"
    $PY -c "from swimlanes.gpu.nccl import load_nccl, nccl4py_status; n = load_nccl(); print('NCCL', n.version(), 'from', n.path); print(nccl4py_status())"
    log "multi: pytest -m gpu (multi-GPU)"
    $PY -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_multi_gpu_measured.py -o addopts="" \
        > "$OUT/multi-tests.txt" 2>&1; echo "multi-GPU tests rc=$?"; tail -25 "$OUT/multi-tests.txt"
    log "multi: calibrate --links"
    $SW calibrate --links --no-cache -o "$OUT/links-preset.json" --raw "$OUT/links-raw.json"
    echo "calibrate --links rc=$?"
    $PY benchmarks/fidelity/host_info.py > /tmp/host.json 2>/dev/null || echo '{}' > /tmp/host.json
    $PY - "$OUT" <<'PYEOF'
import json, subprocess, sys
from datetime import datetime, timezone
out = sys.argv[1]
raw = json.load(open(f"{out}/links-raw.json"))
smi = subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
                      "--format=csv,noheader"], capture_output=True, text=True).stdout
topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout
json.dump({"machine": {"gpus": smi.strip().splitlines(), "topology": topo.splitlines(),
                       "host": json.load(open("/tmp/host.json")),
                       "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                       "command": "swimlanes calibrate --links --no-cache"},
           "preset": json.load(open(f"{out}/links-preset.json")), "raw": raw.get("links", raw)},
          open(f"{out}/links.json", "w"), indent=1)
PYEOF
    # The multi-GPU lessons on this machine's GPUs (the DDP ones cut down to them), measured
    # and compared with the simulator on the links just calibrated and on the built-in preset.
    N=$($PY -c "from swimlanes.gpu.backend import device_count; print(device_count())")
    $PY tests/gpu/multi/fewer_gpus.py "$N" resources/examples/peer-copy-split.json \
        resources/examples/ddp-buckets-*.json --out /tmp/multi-examples
    for f in /tmp/multi-examples/*.json; do
        name=$(basename "$f" .json)
        log "multi: run $name on $N GPUs"
        $SW run "$f" --repeat "$REPEAT" --no-calibrate -o "$OUT/runs/$name.${N}gpu.json" \
            > "$OUT/runs/$name.${N}gpu.txt" 2>&1; echo "rc=$?"; tail -3 "$OUT/runs/$name.${N}gpu.txt"
        for preset in "$OUT/links-preset.json" "${N}x-h200-nvlink"; do
            $SW compare "$f" --device "$preset" --measured "$OUT/runs/$name.${N}gpu.json" 2>&1 \
                | grep -E "^(makespan|preset)"
        done
    done
    log "multi: pytest -m gpu (single-GPU, at most ${MULTI_TESTS_SECONDS:-120} s)"
    timeout "${MULTI_TESTS_SECONDS:-120}" $PY -m pytest -q -p no:cacheprovider -m gpu tests/gpu \
        --ignore=tests/gpu/test_multi_gpu_measured.py -o addopts="" -rfE > "$OUT/gpu-tests.txt" 2>&1
    echo "single-GPU tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/gpu-tests.txt" | tail -15
fi
if has nvtx; then
    log "nvtx"
    $PY -c "from swimlanes.gpu.probes import NvtxRanges; print(NvtxRanges(True).status)"
    if command -v nsys >/dev/null; then
        nsys profile -q -t cuda,nvtx -o /tmp/sl-nvtx -f true \
            $SW run resources/examples/two-streams.json --repeat 1 >/dev/null
        nsys stats -q --report nvtx_sum /tmp/sl-nvtx.nsys-rep 2>&1 | head -20
    else
        echo "nsys is not installed here"
    fi
fi
if has tests; then
    log "pytest -m gpu"
    $PY -m pytest -q -p no:cacheprovider -m gpu tests/gpu -o addopts="" 2>&1 | tail -60
fi
if has calibrate; then
    log "calibrate"
    $SW calibrate ${CALIBRATE_FLAGS:-} -o "$OUT/h200.json" --raw "$OUT/h200-raw.json"
    echo "calibrate rc=$?"
fi
if has quick; then
    # The calibration a first GPU run makes on a new host: it must stay within its 20 s limit.
    log "calibrate --quick"
    $SW calibrate --quick --no-cache -o "$OUT/quick.json" --raw "$OUT/quick-raw.json"
    echo "calibrate --quick rc=$?"
    $PY -c "import json, sys; r = json.load(open(sys.argv[1])); print('quick calibration', r['seconds'], 's; skipped:', r['skipped'])" "$OUT/quick-raw.json"
fi
if has capture; then
    # Real programs captured with CUPTI and rebuilt as pipelines (resources/programs).
    mkdir -p "$OUT/captures"
    for spec in swimming_in_streams:non_blocking swimming_in_streams:blocking \
                cupy_streams:overlap numba_streams:chunks train_step:step:3; do
        prog=${spec%%:*}; range=${spec#*:}; name="$prog-${range%%:*}"
        log "capture $name"
        $SW capture --range "$range" -o "$OUT/captures/$name.run.json" \
            --pipeline "$OUT/captures/$name.json" --trace "$OUT/captures/$name.capture.json.gz" \
            -- python3 "resources/programs/$prog.py" 2>&1 | tail -12
    done
    (cd "$OUT" && tar czf captures.tgz captures && rm -rf captures)
fi
PRESET="$OUT/h200.json"
[ -f "$PRESET" ] || PRESET=resources/presets/h200.json
if has examples; then
    for f in resources/examples/*.json; do
        name=$(basename "$f" .json)
        log "run $name"
        $SW run "$f" --repeat "$REPEAT" -o "$OUT/runs/$name.h200.json" > "$OUT/runs/$name.txt" 2>&1
        echo "rc=$?"; tail -8 "$OUT/runs/$name.txt"
    done
fi
if has accuracy; then
    log "accuracy"
    $PY tests/gpu/accuracy.py --preset "$PRESET" --runs "$OUT/runs" --out "$OUT/accuracy"
    log "compare two-streams (run + simulate on the calibrated preset)"
    $SW compare resources/examples/two-streams.json --device "$PRESET" --repeat 3
    echo "compare rc=$?"
fi
if has fidelity; then
    FID=/tmp/fidelity
    rm -rf "$FID"; mkdir -p "$FID/runs"
    log "fidelity: host"
    $PY benchmarks/fidelity/host_info.py > "$FID/host.json"; cat "$FID/host.json"
    log "fidelity: calibrate"
    $SW calibrate ${CALIBRATE_FLAGS:-} -o "$FID/preset.json" --raw "$FID/calibration-raw.json"
    echo "calibrate rc=$?"
    if [ "${FID_DEVICES:-1}" -gt 1 ]; then  # multi-GPU pipelines (the calibration has links)
        $PY benchmarks/fidelity/generate_multi.py --count "${FID_COUNT:-40}" \
            --devices "$FID_DEVICES" --out "$FID/pipelines"
    else
        $PY benchmarks/fidelity/generate.py --count "${FID_COUNT:-160}" --out "$FID/pipelines"
    fi
    log "fidelity: run"
    # Bounded, so that whatever was measured still comes back inside the call's limit.
    timeout "${FID_SECONDS:-420}" $SW run "$FID"/pipelines/*.json --repeat 5 --out-dir "$FID/runs" \
        --json > "$FID/runs.jsonl" 2> "$FID/runs.err"
    echo "run rc=$? runs=$(ls "$FID/runs" | wc -l)"; grep -v '^== \|^saved ' "$FID/runs.err" | tail -20
    log "fidelity: report"
    $PY benchmarks/fidelity/report.py --data "$FID" 2>&1 | tail -30
    tar -C "$FID" -czf "$OUT/fidelity.tgz" host.json preset.json calibration-raw.json runs runs.err
fi
if has bench; then
    log "bench"
    $PY benchmarks/bench_gpu.py | tee "$OUT/bench_gpu.jsonl"
fi
log "done"
} 2>&1 | tee "$OUT/log.txt"
tar -C "$OUT" -czf "$OUT/runs.tgz" runs 2>/dev/null && rm -rf "$OUT/runs"
