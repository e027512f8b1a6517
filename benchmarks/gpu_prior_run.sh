#!/usr/bin/env bash
# The default search on a GPU without and with priors from another GPU's results stores: two
# `beastgen tune spaces/gemm.py --backend cuda` runs of the same time limit and seed, one cold, one
# warm-started by the stores given, each verified and recorded in its own store under $OUT.
#
#     benchmarks/gpu_prior_run.sh benchmarks/gpu-runs/h200-2026-11-28/call-*/gemm.db
#
# On a GPU machine without network: installs pycuda and beastgen as benchmarks/gpu_acceptance.py
# does (its install and devices steps, from the wheels in .whl/), then runs the two tunes.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-prior-run}
seconds=${TUNE_SECONDS:-75}
mkdir -p "$out"
python3 benchmarks/gpu_acceptance.py --steps devices --work "$out/acceptance" --out "$out/acceptance" \
    > "$out/install.log" 2>&1 || { tail -n 20 "$out/install.log"; exit 1; }
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/beastgen-gpu-site  # the carried pycuda (after a stand-in, for a dry run)
beastgen=$(dirname "$(command -v python3)")/beastgen
priors=()
for store in "$@"; do priors+=(--prior "$store"); done
for run in cold priors; do
    extra=()
    [ "$run" = priors ] && extra=("${priors[@]}")
    timeout $((seconds + 90)) "$beastgen" tune spaces/gemm.py --backend cuda --budget 300 --time "$seconds" \
        --seed 0 "${extra[@]}" --results "$out/$run.db" --json --no-progress > "$out/$run.log" 2>&1
    echo "== $run (exit status $?)"
    grep -v '^{' "$out/$run.log" | tail -n 9
done
