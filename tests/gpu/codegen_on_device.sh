#!/usr/bin/env bash
# On the GPU machine: generate the Numba script of every shipped example, run it, and compare its
# median makespan with `swimlanes run` on the same machine (target: within 5%). Also runs the
# generated CUDA C++ where nvcc is present. Writes $OUT/codegen.json and $OUT/codegen.log.
set -u
OUT="${OUT:-/tmp/swimlanes-out}"
REPEAT="${REPEAT:-5}"
mkdir -p "$OUT" /tmp/codegen
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:app PYTHONUNBUFFERED=1
{
for f in ${EXAMPLES:-resources/examples/*.json}; do
    name=$(basename "$f" .json)
    python3 -m swimlanes codegen "$f" --lang python -o "/tmp/codegen/$name.py" >/dev/null
    gen=$(python3 "/tmp/codegen/$name.py" "$REPEAT" 2>&1 | tail -1)
    # stderr (a first calibration's progress) stays out of the JSON being read
    run=$(python3 -m swimlanes run "$f" --repeat "$REPEAT" --json 2>"/tmp/codegen/$name.err" | python3 -c \
        "import json,sys; print(json.load(sys.stdin)['makespan_us'])" 2>&1)
    cu=""
    if command -v nvcc >/dev/null; then
        python3 -m swimlanes codegen "$f" --lang cuda -o "/tmp/codegen/$name.cu" >/dev/null
        if nvcc -O2 -o "/tmp/codegen/$name" "/tmp/codegen/$name.cu" 2>/tmp/codegen/nvcc.log; then
            cu=$("/tmp/codegen/$name" "$REPEAT" | tail -1)
        else
            cu="nvcc failed: $(head -c 300 /tmp/codegen/nvcc.log)"
        fi
    fi
    python3 - "$name" "$gen" "$run" "$cu" <<'PY'
import json, sys
name, gen, run, cu = sys.argv[1:]
row = {"example": name}
try:
    row["generated_us"] = json.loads(gen)["makespan_us"]
    row["run_us"] = float(run)
    row["error_pct"] = round(100 * (row["generated_us"] - row["run_us"]) / row["run_us"], 2)
except Exception as err:  # keep going: one broken example must not hide the others
    row["problem"] = f"{err}: gen={gen[-300:]!r} run={run[-300:]!r}"
try:
    row["cuda_us"] = json.loads(cu)["makespan_us"] if cu.startswith("{") else cu or None
except Exception:
    row["cuda_us"] = cu
print(json.dumps(row))
PY
done
} 2>&1 | tee "$OUT/codegen.log"
grep '^{' "$OUT/codegen.log" > "$OUT/codegen.json"
