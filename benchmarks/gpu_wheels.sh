#!/usr/bin/env bash
# The wheels that benchmarks/gpu_check.sh installs on the GPU machine, downloaded here into .whl/ (ignored by git;
# name it in the device run's `carry`). That machine has no network; its Python 3.12 already holds PyTorch (with CUDA),
# NumPy, SciPy, Matplotlib, seaborn, statsmodels, PyYAML, tqdm, rich, absl-py, huggingface_hub and pytest, so only the
# rest travels (about 20 MB): SB3, sb3-contrib, rl_zoo3, Gymnasium, Optuna, rliable and what they import that the
# machine lacks, pandas pinned below 3 (arch 7, rliable's, needs it). The list was found by running the CUDA test files
# and the GPU benchmarks in a fresh environment holding only the machine's packages and these wheels (Python 3.11,
# the same versions), adding a wheel for each missing import.
#
#   bash benchmarks/gpu_wheels.sh        # then, on the device: bash benchmarks/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
mkdir -p .whl
rm -f .whl/*.whl
PACKAGES=(
    stable-baselines3==2.9.2 sb3-contrib==2.9.2 rl-zoo3==2.9.2 gymnasium==1.4.0 farama-notifications==0.0.6
    optuna==5.0.0 alembic==1.20.1 sqlalchemy==2.1.9 mako==1.4.3 colorlog==6.12.0
    huggingface-sb3==3.0 wasabi==1.1.3 arch==7.2.0 pandas==2.3.3 pytz==2026.6 tzdata
)
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d .whl "${PACKAGES[@]}"
# rliable is published as a source distribution only: its (pure Python) wheel is built here
"$PY" -m pip wheel -q --no-deps -w .whl rliable==1.2.0
ls .whl
du -sh .whl
