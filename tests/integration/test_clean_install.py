"""A clean install, as a new user makes it: the built wheel in a fresh virtual environment (no system or project
site-packages), then every command run from a folder outside the repository.

This catches a module the commands import but the package does not declare (``requests`` for rl_zoo3's enjoy was one:
the project's own environment had it through the test extras). The CPU build of torch is installed first, as the
Makefile does; every other dependency is resolved by pip from the package's metadata (with the tested versions of
``constraints.txt``). About two minutes on two cores, most of it pip unpacking wheels.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sb3_ablation

pytestmark = pytest.mark.clean_install

REPO = Path(__file__).resolve().parents[2]
TORCH = re.search(r"^torch==(\S+)", (REPO / "constraints.txt").read_text(), re.MULTILINE).group(1)
# tiny runs: a 16-unit network, learning from step 100
TINY = ["learning_starts:100", "policy_kwargs:dict(net_arch=[16])"]


def _pip(venv: Path, *args: str) -> subprocess.CompletedProcess:
    # --no-compile: only the modules the commands import get compiled (on first import), not all of torch's
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def clean_install(tmp_path_factory) -> tuple[Path, Path]:
    """``(bin folder of the fresh venv, an empty working folder outside the repository)``."""
    root = tmp_path_factory.mktemp("clean_install")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(root / "dist")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (root / "dist").glob("sb3_ablation-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # the CPU build (a local wheel, or PyTorch's CPU index): a bare torch requirement would pull a CUDA build
    torch = _pip(venv, f"torch=={TORCH}+cpu")
    if torch.returncode != 0:
        torch = _pip(venv, f"torch=={TORCH}", "--index-url", "https://download.pytorch.org/whl/cpu")
    assert torch.returncode == 0, torch.stderr
    package = _pip(venv, "-c", str(REPO / "constraints.txt"), str(wheel))
    assert package.returncode == 0, package.stderr
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    work = root / "work"
    work.mkdir()
    return venv / "bin", work


def run(clean_install: tuple[Path, Path], *args: str) -> subprocess.CompletedProcess:
    """Run ``sb3-ablation ARGS`` of the clean install in its working folder; fail with its output if it fails."""
    bin_folder, work = clean_install
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(OMP_NUM_THREADS="1", PATH=f"{bin_folder}{os.pathsep}{env.get('PATH', '')}")
    result = subprocess.run(
        [str(bin_folder / "sb3-ablation"), *args], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"sb3-ablation {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_the_package_comes_from_the_clean_install(clean_install):
    bin_folder, work = clean_install
    assert run(clean_install, "--version").stdout.strip() == f"sb3-ablation {sb3_ablation.__version__}"
    result = subprocess.run(
        [str(bin_folder / "python"), "-c", "import sb3_ablation, torch; print(sb3_ablation.__file__, torch.__version__)"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    location, torch_version = result.stdout.split()
    assert Path(location).is_relative_to(bin_folder.parent) and not Path(location).is_relative_to(REPO)
    assert torch_version == f"{TORCH}+cpu"


def test_train_enjoy_record_video(clean_install):
    _, work = clean_install
    run(clean_install, "train", "--algo", "ablatable_td3", "--env", "Pendulum-v1", "-n", "300", "-f", "logs", "--seed", "0",
        "--eval-freq", "-1", "--hyperparams", *TINY)  # fmt: skip
    assert (work / "logs" / "ablatable_td3" / "Pendulum-v1_1" / "Pendulum-v1.zip").is_file()
    # the Python line builds and trains the same model from the wheel's zoo config
    from_zoo = """
import torch
from sb3_ablation import AblatableTD3
trained = AblatableTD3.load("logs/ablatable_td3/Pendulum-v1_1/Pendulum-v1.zip").policy.state_dict()
model = AblatableTD3.from_zoo("Pendulum-v1", seed=0, n_timesteps=300, learning_starts=100, policy_kwargs={"net_arch": [16]})
weights = model.learn(progress_bar=False).policy.state_dict()
print(all(torch.equal(weights[key], trained[key]) for key in trained))
"""
    bin_folder, _ = clean_install
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    result = subprocess.run(
        [str(bin_folder / "python"), "-c", from_zoo], cwd=work, env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.stdout.splitlines()[-1:] == ["True"], result.stdout + result.stderr
    run(clean_install, "enjoy", "--algo", "ablatable_td3", "--env", "Pendulum-v1", "-f", "logs", "--no-render", "-n", "50")
    run(clean_install, "record-video", "--algo", "ablatable_td3", "--env", "Pendulum-v1", "-f", "logs", "-n", "50",
        "-o", "videos")  # fmt: skip
    assert list((work / "videos").glob("*.mp4"))


def test_study_and_report(clean_install):
    _, work = clean_install
    # a shipped study, found by name, with rl-zoo's short flags
    run(clean_install, "study", "--config", "pendulum", "--variants", "td3", "no_clipped_double_q", "--seed-list", "3",
        "-n", "300", "--eval-freq", "150", "--eval-episodes", "2", "--workers", "1", "--no-progress", "-f", "study",
        "-params", *TINY)  # fmt: skip
    assert len(list((work / "study" / "runs").glob("Pendulum-v1/*/seed_3.json.gz"))) == 2
    run(clean_install, "report", "study", "--reps", "200")
    assert "no_clipped_double_q" in (work / "study" / "report.md").read_text()


def test_multi_seed_tuning(clean_install):
    _, work = clean_install
    run(clean_install, "train", "--algo", "ablatable_td3", "--env", "Pendulum-v1", "-n", "300", "-f", "tune",
        "-optimize", "--n-trials", "2", "--n-evaluations", "1", "--eval-episodes", "1", "--trial-seeds", "2",
        "--trial-aggregate", "iqm", "--seed", "0", "--hyperparams", *TINY)  # fmt: skip
    best = (work / "tune" / "ablatable_td3" / "best_Pendulum-v1.yml").read_text()
    assert "iqm over seeds [0, 1]" in best.splitlines()[0]


def test_the_committed_reports_ship_in_the_wheel(clean_install):
    """The course notebook's section 5 reads the committed studies' report.json files from the installed package."""
    bin_folder, work = clean_install
    result = subprocess.run(
        [str(bin_folder / "python"), "-c", "import sb3_ablation; print(sb3_ablation.__file__)"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    shipped = Path(result.stdout.strip()).parent / "committed_studies"
    committed = sorted((REPO / "docs" / "studies").glob("*/report.json"))
    assert committed and sorted(path.parent.name for path in shipped.glob("*/report.json")) == [
        path.parent.name for path in committed
    ]
    assert all((shipped / path.parent.name / "report.json").read_bytes() == path.read_bytes() for path in committed)
