"""Run SB3's own tests of TD3 and DDPG with this package's classes substituted (``make sb3-tests``).

SB3's wheel ships no tests; its source distribution does. This downloads the sdist of the installed SB3 version
(``pip download``, cached in ``.cache/sb3-tests``), extracts its ``tests/`` and its pytest settings (not the package:
the tests must import the installed SB3) and runs the tests whose id names TD3 or DDPG with ``substitute.py``, which
binds ``stable_baselines3.TD3`` to ``AblatableTD3`` and ``stable_baselines3.DDPG`` to ``DDPG``. Extra arguments go
to pytest (paths relative to SB3's source tree), e.g. ``python tests/sb3_suite/run.py -x tests/test_save_load.py``.
"""

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import stable_baselines3

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "sb3-tests"
# the tests that exercise TD3 or DDPG: their ids name the class (pytest ids a class by its __name__)
SELECTION = "td3 or ddpg"
# modules that import an optional dependency this project does not install, and test neither TD3 nor DDPG
IGNORED = {"tests/test_utils.py": "imports ale_py (Atari) at module level"}
# where this package deliberately differs from SB3's TD3; each such test is left out with the reason
DIFFERENCES = {
    "tests/test_tensorboard.py::test_tensorboard[td3]": "AblatableTD3 logs under its own name (learn's default "
    "tb_log_name, as each SB3 and sb3-contrib algorithm does), so the folder is AblatableTD3_1, not TD3_1",
}


def extracted_suite(version: str) -> Path:
    """SB3's tests and pytest settings for ``version``, downloaded and extracted once."""
    suite = CACHE / f"stable_baselines3-{version}"
    if (suite / "tests").is_dir():
        return suite
    CACHE.mkdir(parents=True, exist_ok=True)
    sdist = CACHE / f"stable_baselines3-{version}.tar.gz"
    if not sdist.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(CACHE),
             f"stable-baselines3=={version}"],
            check=True,
        )  # fmt: skip
    prefix = f"stable_baselines3-{version}/"
    partial = Path(tempfile.mkdtemp(dir=CACHE))  # renamed into place when complete: an interrupted run leaves no half
    with tarfile.open(sdist) as archive:
        members = [
            m for m in archive.getmembers() if m.name.startswith(prefix + "tests/") or m.name == prefix + "pyproject.toml"
        ]
        archive.extractall(partial, members=members, filter="data")
    shutil.rmtree(suite, ignore_errors=True)
    (partial / prefix).rename(suite)
    shutil.rmtree(partial)
    return suite


def main(argv: list[str]) -> int:
    suite = extracted_suite(stable_baselines3.__version__)
    command = [sys.executable, "-m", "pytest", "-p", "substitute", "-k", SELECTION, "-q", *argv]
    command += [f"--ignore={path}" for path in IGNORED] + [f"--deselect={test}" for test in DIFFERENCES]
    # cwd is the extracted suite (SB3's own pytest settings and relative paths); the plugin's folder is importable
    python_path = os.pathsep.join([str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(command, cwd=suite, env={**os.environ, "PYTHONPATH": python_path}).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
