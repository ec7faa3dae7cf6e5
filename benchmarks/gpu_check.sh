#!/usr/bin/env bash
# The batched engine's GPU check, under 10 minutes of GPU time: install from wheels carried to the machine (no
# network there), run the CUDA tests (the group-invariance tests on CUDA included: a run alone == in a group of three,
# and deterministic, Gaussian, delayed and undelayed agents in one mixed group == their per-variant groups; the same
# with the evaluation vectorised across agents), then the engine's scaling benchmark on CUDA, whose JSON is written to
# ${OUT:-.}/engine_scaling_cuda.json (commit it as benchmarks/results/engine_scaling_cuda.json; it is written before
# the factorial's timing, then again with it), and the evaluation's (per agent against vectorised, K = 10, 64):
# ${OUT:-.}/evaluation_scaling_cuda.json.
#
#   WHEELS=/path/to/wheels bash benchmarks/gpu_check.sh
#
# WHEELS: a folder with the wheels of this package's dependencies (e.g. `pip download -d wheels -c constraints.txt
# -e ".[test]"` with a CUDA build of torch), made where there is network access.
# Time: about 1-2 minutes to install, at most 4 for the tests, 4 for the engine's benchmark and 2.5 for the
# evaluation's (each under a timeout; the tests and benchmarks take less).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-wheels}
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -m venv /tmp/gpu-check-venv
/tmp/gpu-check-venv/bin/pip install -q --no-index --find-links "$WHEELS" -c constraints.txt -e ".[test]"
PY=/tmp/gpu-check-venv/bin/python
$PY -c "import torch; assert torch.cuda.is_available(), 'no CUDA device visible to torch'; print(torch.__version__)"
# the CUDA tests: BatchedTD3 on CUDA, a run's record alone == in a group of three, a mixed group == per-variant groups
timeout 240 $PY -m pytest -q -p no:cacheprovider tests/integration/test_batched_invariance.py \
    tests/integration/test_batched.py tests/integration/test_batched_evaluation.py -k "cuda"
# agent-steps/s for K = 1, 10, 64, 640 mixed variants, per-variant groups against one mixed group, SB3's TD3 for
# reference; then the whole 2^6 x 10-seed factorial (2,000 steps per run) in groups of up to 640 (one process)
timeout 240 $PY benchmarks/engine_scaling.py --device cuda --agents 1 10 64 640 --steps 100 --repeats 2 \
    --factorial-steps 2000 --json "$OUT/engine_scaling_cuda.json"
# the evaluation of a group: each agent's predict per step against all agents' actions in one call (K = 10, 64; 640
# takes minutes: see the script), and how far the two evaluations' returns are apart on trained weights
timeout 150 $PY benchmarks/evaluation_scaling.py --device cuda --agents 10 64 --repeats 2 --agreement-steps 1000 \
    --json "$OUT/evaluation_scaling_cuda.json"
