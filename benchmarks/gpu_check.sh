#!/usr/bin/env bash
# The batched engine's GPU check, under 10 minutes of GPU time: install from wheels carried to the machine (no
# network there), run the CUDA tests (the group-invariance tests on CUDA included: a run alone == in a group of three,
# and deterministic, Gaussian, delayed and undelayed agents in one mixed group == their per-variant groups; the same
# with the evaluation vectorised across agents; the replay batches gathered on the GPU == gathered on the host), then
# the engine's scaling benchmark on CUDA, whose JSON is written to ${OUT:-.}/engine_scaling_cuda.json (commit it as
# benchmarks/results/engine_scaling_cuda.json; it is written before the factorial's timing, then again with it), the
# evaluation's (per agent against vectorised, K = 10, 64): ${OUT:-.}/evaluation_scaling_cuda.json, and whether
# torch.compile keeps a critic step's gradients there: ${OUT:-.}/compiled_update_cuda.json.
#
#   bash benchmarks/gpu_wheels.sh        # here, once: the wheels into .whl/ (about 20 MB)
#   bash benchmarks/gpu_check.sh         # there, with .whl carried: PYTHONUNBUFFERED=1 OUT=$OUT bash ...
#
# The machine's own python3 (3.12, PyTorch with CUDA) runs it: the wheels go into /tmp/site, ahead of its packages on
# PYTHONPATH, and the package is imported from this checkout (no install).
# Time: a few seconds to install, then at most 2.5 minutes for the tests, 3.5 for the engine's benchmark, 1.5 for
# the evaluation's and 0.5 for the compiler's (each under a timeout, so the whole stays under 10 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
PY=python3
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
$PY -c "import torch; assert torch.cuda.is_available(), 'no CUDA device visible to torch'; print(torch.__version__)"
# each check runs whatever the previous one gave (a timeout or a failure is reported, and the script ends non-zero)
failed=()
check() {
    local name=$1
    shift
    "$@" || failed+=("$name (exit $?)")
}
# the CUDA tests: BatchedTD3 on CUDA, a run's record alone == in a group of three, a mixed group == per-variant groups,
# a mixed group's batches gathered on the GPU (its default) == gathered on the host, vectorised evaluation
check tests timeout 150 $PY -m pytest -q -p no:cacheprovider tests/integration/test_batched_invariance.py \
    tests/integration/test_batched.py tests/integration/test_device_buffer.py tests/integration/test_batched_evaluation.py \
    -k "cuda"
# agent-steps/s for K = 1, 10, 64, 640 mixed variants, per-variant groups against one mixed group, SB3's TD3 for
# reference; then the whole 2^6 x 10-seed factorial (2,000 steps per run) in groups of up to 640 (one process)
check engine_scaling timeout 210 $PY benchmarks/engine_scaling.py --device cuda --agents 1 10 64 640 --steps 100 \
    --repeats 2 --factorial-steps 2000 --json "$OUT/engine_scaling_cuda.json"
# the evaluation of a group: each agent's predict per step against all agents' actions in one call (K = 10, 64; 640
# takes minutes: see the script), and how far the two evaluations' returns are apart on trained weights
check evaluation_scaling timeout 90 $PY benchmarks/evaluation_scaling.py --device cuda --agents 10 64 --repeats 1 \
    --agreement-steps 1000 --json "$OUT/evaluation_scaling_cuda.json"
# torch.compile of a batched critic step on the GPU: does it keep the loss and gradients bit for bit, and its speed
check compiled_update timeout 30 $PY benchmarks/compiled_update.py --device cuda --agents 64 640 --steps 50 \
    --repeats 2 --json "$OUT/compiled_update_cuda.json"
if ((${#failed[@]})); then
    echo "failed: ${failed[*]}"
    exit 1
fi
echo "every check passed"
