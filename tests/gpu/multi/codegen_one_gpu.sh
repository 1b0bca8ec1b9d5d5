#!/usr/bin/env bash
# On a GPU machine: export tests/gpu/multi/one-gpu-collectives.json (every multi-device kind on
# a communicator of one GPU) as a Numba script and as CUDA C++, build the C++ against the
# installed NCCL wheel, and run both (they check nothing but that the calls succeed).
set -u
export PYTHONPATH=/tmp/site:app NCCL_NVLS_ENABLE=0
F=tests/gpu/multi/one-gpu-collectives.json
mkdir -p /tmp/cg1
python3 -m swimlanes codegen "$F" --lang python -o /tmp/cg1/one.py >/dev/null
out=$(timeout 120 python3 /tmp/cg1/one.py 3 2>&1); rc=$?
echo "python export (rc=$rc):"; echo "$out" | tail -3
python3 -m swimlanes codegen "$F" --lang cuda -o /tmp/cg1/one.cu >/dev/null
# nvcc finds NCCL on the image's own paths; a wheel's copy is added where there is one.
FLAGS=""
for d in $(python3 -c "import site; print(*site.getsitepackages())"); do
    for n in "$d"/nvidia/nccl "$d"/nvidia/cu13; do
        [ -f "$n/include/nccl.h" ] && FLAGS="$FLAGS -I$n/include -L$n/lib -Xlinker -rpath=$n/lib"
    done
done
if nvcc -O2 -std=c++17 $FLAGS -o /tmp/cg1/one /tmp/cg1/one.cu -lnccl 2>/tmp/cg1/nvcc.log; then
    out=$(timeout 120 /tmp/cg1/one 3 2>&1); rc=$?
    echo "cuda export (rc=$rc):"; echo "$out" | tail -3
else
    echo "nvcc failed:"; head -30 /tmp/cg1/nvcc.log
fi
