"""Every bad input of every sub-command: one line on stderr, no traceback, exit status 2, nothing written.

The cases run as a user runs them: ``sb3-ablation ARGS`` in its own process, in its own folder. A fresh interpreter
per case would spend about ten seconds importing torch, SB3 and rl_zoo3 each time, so one driver process imports the
command (``sb3_ablation.cli:main``, the console script's entry point) and forks a process per case; the child
redirects its stdout and stderr to files, changes into the case's folder, runs the command and exits with its status
(an uncaught exception prints its traceback and exits 1, as Python does). Two cases also run through the installed
``sb3-ablation`` script, to show that both give the same output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sb3_ablation.cli.study import first_sentence
from sb3_ablation.study.plan.config import (
    SeedList,
    StudyConfig,
    find_config_file,
    load_config_file,
    make_tasks,
    shipped_studies,
)
from sb3_ablation.study.store.runs import unreadable_runs

REPO = Path(__file__).resolve().parents[2]
ENV = "Pendulum-v1"
MODEL = "logs/ablatable_td3/Pendulum-v1_1/Pendulum-v1.zip"
STUDY = ["study", "--env", ENV, "-n", "200", "--out", "out", "--no-progress", "-params", "learning_starts:100"]
TRAIN = ["train", "--algo", "ablatable_td3", "--env", ENV, "-f", "logs"]
ENJOY = ["enjoy", "--algo", "ablatable_td3", "--env", ENV, "-f", "logs", "--no-render", "-n", "10"]


def _file(path: str, text: str = "x") -> dict[str, str]:
    return {path: text}


def _truncated_zip() -> bytes:
    """A zip file cut in the middle, as a copy interrupted half way leaves it."""
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data", json.dumps({"policy_class": "x", "padding": "p" * 4000}))
    return buffer.getvalue()[: len(buffer.getvalue()) // 2]


def _saved_model(algo: str) -> Callable[[], bytes]:
    """An untrained model file of SB3's ``algo`` (``"PPO"``, ``"TD3"``), made when the cases' files are written."""

    def make() -> bytes:
        import io

        import stable_baselines3 as sb3

        buffer = io.BytesIO()
        settings = {"n_steps": 64, "batch_size": 64} if algo == "PPO" else {"buffer_size": 100}
        getattr(sb3, algo)("MlpPolicy", ENV, **settings).save(buffer)
        return buffer.getvalue()

    return make


PENDULUM_STUDY = REPO / "docs" / "studies" / "pendulum"


class Folder:
    """A folder for a case: empty, or a copy of the study folder ``study`` (its records only); read-only or not."""

    def __init__(self, study: Path | None = None, read_only: bool = False):
        self.study, self.read_only = study, read_only

    def make(self, folder: Path) -> None:
        if self.study is None:
            folder.mkdir(parents=True)
        else:
            shutil.copytree(self.study, folder, ignore=shutil.ignore_patterns("report.*", "figures", "*.zip"))
        for path in [folder, *folder.rglob("*")] if self.read_only else []:
            path.chmod(0o555 if path.is_dir() else 0o444)


def _yaml(text: str) -> dict[str, str]:
    return {"s.yml": textwrap.dedent(text)}


# case -> (arguments, files to create first (path -> text, bytes, or a function making the bytes), modules hidden as
# not installed, expected text)
CASES: dict[str, tuple[list[str], dict, list[str], list[str]]] = {
    "unknown command": (["trian"], {}, [], ["unknown command 'trian'"]),
    # train
    "train: zero budget": ([*TRAIN, "-n", "0"], {}, [], ["-n 0", "positive"]),
    "train: negative budget": ([*TRAIN, "-n", "-5"], {}, [], ["-n -5", "positive"]),
    "train: budget not a number": ([*TRAIN, "-n", "many"], {}, [], ["invalid int value: 'many'"]),
    "train: discrete actions": (
        ["train", "--algo", "ablatable_td3", "--env", "CartPole-v1", "-f", "logs"],
        {},
        [],
        ["ablatable_td3 needs continuous (Box) actions", "CartPole-v1", "Discrete(2)"],
    ),
    "train: misspelt switch": (
        [*TRAIN, "--hyperparams", "clipped_dobule_q:False"],
        {},
        [],
        ["did you mean 'clipped_double_q'"],
    ),
    "train: switch as a flag": (
        [*TRAIN, "--clipped-double-q", "False"],
        {},
        [],
        ["unrecognized arguments: --clipped-double-q"],
    ),
    "train: bad expression": ([*TRAIN, "--hyperparams", "learning_rate:1e-"], {}, [], ["could not evaluate '1e-'"]),
    "train: unknown algorithm": (["train", "--algo", "td4", "--env", ENV], {}, [], ["'td4'"]),
    "train: missing config": ([*TRAIN, "--conf-file", "nope.yml"], {}, [], ["nope.yml", "not found"]),
    "train: --track without wandb": ([*TRAIN, "--track"], {}, ["wandb"], ["--track", "needs wandb", "pip install wandb"]),
    # checked before the run folder (and the tensorboard folder) is made
    "train: -tb without tensorboard": (
        [*TRAIN, "-tb", "tb"],
        {},
        ["tensorboard"],
        ["-tb", "needs tensorboard", "pip install tensorboard", "pip install 'sb3-ablation[tensorboard]'"],
    ),
    "train: simulator not installed": (
        ["train", "--algo", "ablatable_td3", "--env", "Walker2d-v5", "-f", "logs"],
        {},
        ["mujoco"],
        ["Walker2d-v5 needs MuJoCo", "pip install 'sb3-ablation[mujoco]'"],
    ),
    "train: missing trained agent": ([*TRAIN, "-i", "nope.zip"], {}, [], ["--trained-agent nope.zip", "expected an existing"]),
    "train: trained agent of another algorithm": (
        [*TRAIN, "-i", "ppo.zip"],
        {"ppo.zip": _saved_model("PPO")},
        [],
        ["--trained-agent ppo.zip holds a PPO model", "ActorCriticPolicy", "ablatable_td3 does not load", "use --algo ppo"],
    ),
    # a budget that would train nothing: one rule for train, train -optimize and study
    "train: budget at or below learning_starts": (
        [*TRAIN, "-n", "3000"],
        {},
        [],
        ["the budget (-n 3000) is at or below learning_starts (10000)", "learning_starts:300", "--quick"],
    ),
    "train -optimize: budget at or below learning_starts": (
        [*TRAIN, "-n", "2000", "-optimize", "--n-trials", "1"],
        {},
        [],
        ["the budget (-n 2000) is at or below learning_starts (10000)", "learning_starts:200", "--quick"],
    ),
    "train: --quick without -n": ([*TRAIN, "--quick"], {}, [], ["--quick", "add -n"]),
    "train: --quick and learning_starts": (
        [*TRAIN, "-n", "300", "--quick", "--hyperparams", "learning_starts:5"],
        {},
        [],
        ["--quick sets learning_starts, which --hyperparams sets too"],
    ),
    "train: log folder that cannot be made": (
        ["train", "--algo", "ablatable_td3", "--env", ENV, "-n", "300", "--quick", "-f", "/proc/forbidden"],
        {},
        [],
        ["cannot create /proc/forbidden (-f /proc/forbidden): No such file or directory"],
    ),
    "study: budget at or below learning_starts": (
        ["study", "--env", ENV, "-n", "3000", "--out", "out", "--no-progress"],
        {},
        [],
        ["n_timesteps 3,000 is at or below learning_starts 10,000", "learning_starts:300", "--quick"],
    ),
    "study: --quick without -n": (
        ["study", "--env", ENV, "--out", "out", "--no-progress", "--quick"],
        {},
        [],
        ["--quick", "add -n"],
    ),
    # enjoy and record-video
    "enjoy: no model": (ENJOY, {}, [], ["no trained ablatable_td3 model"]),
    "enjoy: no folder, default -f": (
        ["enjoy", "--algo", "ablatable_td3", "--env", ENV, "--no-render", "-n", "10"],
        {},
        [],
        ["no folder rl-trained-agents/ablatable_td3", "pass -f with the log folder", "-f defaults to"],
    ),
    "enjoy: experiment without a model": (
        [*ENJOY, "--exp-id", "2"],
        {MODEL: _saved_model("TD3"), "logs/ablatable_td3/Pendulum-v1_2/Pendulum-v1/config.yml": "x"},
        [],
        ["No model found", "Pendulum-v1_2 (--exp-id 2)", "hold one: Pendulum-v1_1 (pass --exp-id 1)"],
    ),
    "enjoy: no such experiment": (
        [*ENJOY, "--exp-id", "7"],
        {MODEL: _saved_model("TD3")},
        [],
        ["no experiment folder logs/ablatable_td3/Pendulum-v1_7 (--exp-id 7)", "(pass --exp-id 1)"],
    ),
    "enjoy: no experiment holds a model": (
        ENJOY,
        {"logs/ablatable_td3/Pendulum-v1_1/Pendulum-v1/config.yml": "x"},
        [],
        ["No model found", "(--exp-id 0)", "none of its experiments holds one"],
    ),
    "enjoy: corrupt model": (ENJOY, _file(MODEL, "not a zip"), [], ["not a readable model file"]),
    "enjoy: truncated model": (ENJOY, {MODEL: _truncated_zip()}, [], ["not a readable model file"]),
    "enjoy: zero steps": ([*ENJOY, "-n", "0"], {}, [], ["-n 0", "positive"]),
    "enjoy: model of another algorithm": (
        ENJOY,
        {MODEL: _saved_model("PPO")},
        [],
        [f"{MODEL} holds a PPO model", "ActorCriticPolicy", "--algo ablatable_td3 does not load", "use --algo ppo"],
    ),
    "enjoy: SB3's TD3 model as ddpg_scratch": (
        ["enjoy", "--algo", "ddpg_scratch", "--env", ENV, "-f", "logs", "--no-render", "-n", "10"],
        {"logs/ddpg_scratch/Pendulum-v1_1/Pendulum-v1.zip": _saved_model("TD3")},
        [],
        ["holds a TD3 model", "policy_delay=2, 2 critics", "--algo ddpg_scratch does not load", "use --algo ablatable_td3"],
    ),
    "enjoy: unknown environment": (["enjoy", "--algo", "ablatable_td3", "--env", "Pendulm-v1"], {}, [], ["'Pendulum-v1'"]),
    "record-video: no model": (
        ["record-video", "--algo", "ablatable_td3", "--env", ENV, "-f", "logs", "-n", "10"],
        {},
        [],
        ["no trained ablatable_td3 model"],
    ),
    "record-video: no moviepy": (
        ["record-video", "--algo", "ablatable_td3", "--env", ENV, "-f", "logs", "-n", "10"],
        {},
        ["moviepy"],
        ["needs moviepy"],
    ),
    "export: no storage": (
        [
            "export",
            "--algo",
            "ablatable_td3",
            "--env",
            ENV,
            "--storage",
            "sqlite:///no.db",
            "--study-name",
            "x",
            "-o",
            "t.yml",
        ],
        {},
        [],
        ["no.db not found"],
    ),
    # study
    "study: out is a file": ([*STUDY, "--out", "afile"], _file("afile"), [], ["'afile' is not a folder"]),
    "study: out inside a file": ([*STUDY, "--out", "afile/sub"], _file("afile"), [], ["parent 'afile' is a file"]),
    "study: malformed yaml": (
        [*STUDY, "--config", "bad.yml"],
        _file("bad.yml", "env: [Pendulum-v1\nseeds: 2\n"),
        [],
        ["bad.yml", "not readable YAML", "line 2"],
    ),
    "study: yaml not a mapping": ([*STUDY, "--config", "list.yml"], _file("list.yml", "- a\n- b\n"), [], ["mapping"]),
    "study: unknown setting": ([*STUDY, "--config", "s.yml"], _file("s.yml", "sedes: 3\n"), [], ["unknown setting 'sedes'"]),
    "study: several unknown settings": (
        [*STUDY, "--config", "s.yml"],
        _yaml("sedes: 3\nn-timestep: 500\ncolour: red\n"),
        [],
        ["unknown settings 'sedes' (did you mean 'seeds'?), 'n-timestep' (did you mean 'n_timesteps'?), 'colour' in"],
    ),
    "study: several unknown analysis keys": (
        [*STUDY, "--config", "s.yml"],
        _yaml("analysis:\n  alpah: 0.1\n  primery: last\n"),
        [],
        ["analysis: unknown keys 'alpah' (did you mean 'alpha'?), 'primery' (did you mean 'primary'?)"],
    ),
    "study: margin of a wrong-case env": (
        [*STUDY, "--config", "s.yml"],
        _yaml("analysis:\n  margins: {pendulum-v1: 50}\n"),
        [],
        ["analysis: margins of env not in the study: 'pendulum-v1' (did you mean 'Pendulum-v1'?)"],
    ),
    "study: unknown study name": ([*STUDY, "--config", "pendullum"], {}, [], ["'pendullum' not found", "pendulum"]),
    "study: bad expression": ([*STUDY, "--hyperparams", "learning_rate:1e-"], {}, [], ["could not evaluate '1e-'"]),
    "study: not key:value": ([*STUDY, "-params", "learning_rate"], {}, [], ["expected key:value"]),
    "study: discrete actions": ([*STUDY, "--env", "CartPole-v1"], {}, [], ["needs continuous (Box) actions", "CartPole-v1"]),
    "study: zero budget": ([*STUDY, "-n", "0"], {}, [], ["n_timesteps must be a positive integer"]),
    "study: negative budget": ([*STUDY, "--n-timesteps", "-5"], {}, [], ["n_timesteps must be a positive integer"]),
    "study: zero seeds": ([*STUDY, "--seeds", "0"], {}, [], ["--seeds 0 runs nothing"]),
    "study: negative seed": ([*STUDY, "--seed-list", "-1"], {}, [], ["seeds must be non-negative integers"]),
    "study: repeated seed": ([*STUDY, "--seed-list", "3", "3"], {}, [], ["seeds [3, 3]: 3 given more than once"]),
    "study: seeds and seed list": (
        [*STUDY, "--seeds", "2", "--seed-list", "3"],
        {},
        [],
        ["not allowed with argument --seeds"],
    ),
    "study: zero workers": ([*STUDY, "--workers", "0"], {}, [], ["workers must be a positive integer"]),
    "study: unknown env": ([*STUDY, "--env", "Pendulm-v1"], {}, [], ["'Pendulm-v1'"]),
    "study: unknown variant": ([*STUDY, "--variants", "no_clipped_dobule_q"], {}, [], ["no_clipped_dobule_q"]),
    "study: switch as hyperparameter": ([*STUDY, "-params", "clipped_double_q:False"], {}, [], ["chosen by the variants"]),
    "study: ray without ray": ([*STUDY, "--backend", "ray"], {}, ["ray"], ["--backend ray needs Ray"]),
    "study: unknown flag": ([*STUDY, "--colour", "3"], {}, [], ["unrecognized arguments: --colour 3"]),
    # checked once, before any run (and not by each run, blaming the zoo config)
    "study: simulator not installed": (
        [*STUDY, "--env", "Walker2d-v5"],
        {},
        ["mujoco"],
        ["Walker2d-v5 needs MuJoCo", "pip install 'sb3-ablation[mujoco]'"],
    ),
    "study: out cannot be written": (
        [*STUDY, "--out", "ro/study"],
        {"ro": Folder(read_only=True)},
        [],
        ["output folder 'ro/study' cannot be written", "pick a folder you can write with --out"],
    ),
    # report and demo
    "report: no study": (["report", "nothing"], {}, [], ["not a study folder"]),
    "report: a file": (["report", "afile"], _file("afile"), [], ["not a study folder"]),
    "report: corrupt manifest": (["report", "s"], _file("s/study.json", '{"envs": ['), [], ["not a readable study manifest"]),
    "report: not a manifest": (["report", "s"], _file("s/study.json", "[1, 2]"), [], ["not a study manifest"]),
    "report: too few resamples": (["report", "s", "--reps", "5"], {}, [], ["--reps must be at least 100"]),
    "report: study folder cannot be written": (
        ["report", "s", "--reps", "100"],
        {"s": Folder(PENDULUM_STUDY, read_only=True)},
        [],
        ["sb3-ablation report: ", "Permission denied"],
    ),
    "report: --margin of a wrong-case env": (
        ["report", "s", "--reps", "100", "--margin", "pendulum-v1=50"],
        {"s": Folder(PENDULUM_STUDY)},
        [],
        ["--margin: margins of env not in the study: 'pendulum-v1' (did you mean 'Pendulum-v1'?)"],
    ),
    "demo: out is a file": (["demo", "--out", "afile", "--no-progress"], _file("afile"), [], ["'afile' is not a folder"]),
    "demo: zero workers": (["demo", "--out", "d", "--workers", "0"], {}, [], ["workers must be a positive integer"]),
    "bench: unknown option": (["bench", "--fastest"], {}, [], ["unrecognized arguments: --fastest"]),
}

if not torch.cuda.is_available():  # (on a machine with a GPU, --device cuda is a valid choice)
    CASES["train: --device cuda without CUDA"] = (
        [*TRAIN, "--device", "cuda"],
        {},
        [],
        ["--device cuda", "CUDA is not available"],
    )
    CASES["study: --device cuda without CUDA"] = (
        [*STUDY, "--device", "cuda"],
        {},
        [],
        ["--device cuda", "CUDA is not available"],
    )
    CASES["enjoy: --device cuda without CUDA"] = (
        [*ENJOY, "--device", "cuda"],
        {},
        [],
        ["--device cuda", "CUDA is not available"],
    )

DRIVER = textwrap.dedent(
    """
    import json, os, signal, sys, traceback
    from sb3_ablation.cli import main
    # the libraries every command imports, imported once here rather than once per case
    import gymnasium, moviepy, rl_zoo3.enjoy, rl_zoo3.exp_manager, rl_zoo3.import_envs, rl_zoo3.train, rl_zoo3.utils
    import sb3_ablation.bench.cli, sb3_ablation.cli.study, sb3_ablation.study.run.execute
    import sb3_ablation.study.render.report
    import sb3_ablation.study.run.runner, sb3_ablation.zoo.enjoy, sb3_ablation.zoo.experiment, sb3_ablation.zoo.export
    import sb3_ablation.zoo.record_video, sb3_ablation.zoo.registry, sb3_ablation.zoo.train
    for env_id in ("Pendulum-v1", "CartPole-v1"):
        gymnasium.make(env_id).close()

    results = {}
    for name, case in json.load(open(sys.argv[1])).items():
        pid = os.fork()
        if pid == 0:
            signal.alarm(120)  # a case that starts training by mistake fails instead of hanging
            os.chdir(case["folder"])
            out, err = os.open("../stdout", os.O_WRONLY | os.O_CREAT), os.open("../stderr", os.O_WRONLY | os.O_CREAT)
            os.dup2(out, 1)
            os.dup2(err, 2)
            if case["drop_root"]:  # root writes into a read-only folder: the case runs as nobody
                os.setgid(65534)
                os.setuid(65534)
            for module in case["hide"]:
                sys.modules[module] = None  # `import module` raises ImportError, as when it is not installed
            sys.argv = ["sb3-ablation", *case["argv"]]
            try:
                code = main(case["argv"])
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        results[name] = os.waitstatus_to_exitcode(status)
    json.dump(results, open(sys.argv[2], "w"))
    """
)


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns) for path in folder.rglob("*")}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, request) -> dict[str, tuple[int, str, str, dict, dict]]:
    """case -> (exit status, stdout, stderr, files before, files after)."""
    root = tmp_path_factory.mktemp("cli_errors")
    # cases with a read-only folder, in a folder that the user nobody can enter (when root runs them as nobody)
    shared = Path(tempfile.mkdtemp(prefix="sb3-ablation-cli-errors-"))
    shared.chmod(0o755)

    def remove_shared() -> None:
        for path in shared.rglob("*"):
            path.chmod(0o755)
        shutil.rmtree(shared)

    request.addfinalizer(remove_shared)
    cases, before = {}, {}
    for index, (name, (argv, files, hide, _)) in enumerate(CASES.items()):
        read_only = any(isinstance(content, Folder) and content.read_only for content in files.values())
        folder = (shared if read_only else root) / f"case_{index}" / "work"
        folder.mkdir(parents=True)
        for path, content in files.items():
            if isinstance(content, Folder):
                content.make(folder / path)
                continue
            content = content() if callable(content) else content
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(content if isinstance(content, bytes) else content.encode())
        before[name] = snapshot(folder)
        if read_only:
            folder.parent.chmod(0o777)  # (the case's stdout and stderr files go there)
            folder.chmod(0o777)
        cases[name] = {"argv": argv, "folder": str(folder), "hide": hide, "drop_root": read_only and os.geteuid() == 0}
    (root / "cases.json").write_text(json.dumps(cases))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    driver = subprocess.run(
        [sys.executable, "-c", DRIVER, str(root / "cases.json"), str(root / "results.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert driver.returncode == 0, driver.stderr
    codes = json.loads((root / "results.json").read_text())
    return {
        name: (
            codes[name],
            (Path(case["folder"]).parent / "stdout").read_text(),
            (Path(case["folder"]).parent / "stderr").read_text(),
            before[name],
            snapshot(Path(case["folder"])),
        )
        for name, case in cases.items()
    }


# cases whose check is not wired yet: strict, so that the case fails once it passes (then drop it from here)
PENDING: dict[str, str] = {}


@pytest.mark.parametrize(
    "case", [pytest.param(name, marks=pytest.mark.xfail(reason=PENDING[name], strict=True)) if name in PENDING else name
             for name in CASES],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2_and_nothing_written(outcomes, case):
    code, stdout, stderr, before, after = outcomes[case]
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    command = CASES[case][0][0]
    assert lines[0].startswith("sb3-ablation"), lines[0]
    if command in ("train", "enjoy", "record-video", "export"):
        assert lines[0].startswith(f"sb3-ablation {command}: error: ")
    for text in CASES[case][3]:
        assert text in lines[0]
    if "simulator" in case or "log folder" in case:  # the cause, not the config that names the env
        assert "zoo_configs" not in lines[0]
    if command == "train":  # rl_zoo3's preamble is printed only once a run is set up
        assert stdout == "", stdout
    assert code == 2
    assert after == before


@pytest.mark.parametrize("case", ["train: zero budget", "study: out is a file"])
def test_the_installed_script_gives_the_same_line(outcomes, case, tmp_path):
    script = Path(sys.executable).parent / "sb3-ablation"
    if not script.is_file():
        pytest.skip("the package is not installed in this environment")
    argv, files, _, _ = CASES[case]
    for path, content in files.items():
        (tmp_path / path).write_text(content)
    result = subprocess.run(
        [str(script), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert (result.returncode, result.stderr) == (2, outcomes[case][2])


def test_study_flags_follow_rl_zoo():
    from sb3_ablation.cli.study import _study_parser, config_from_args

    def config(*argv: str) -> StudyConfig:
        return config_from_args(_study_parser().parse_args(["--env", ENV, *argv]))

    assert config("--seeds", "3").seeds == [0, 1, 2]
    assert config("--seeds", "3", "7").seeds == [3, 7]
    assert config("--seed-list", "7").seeds == [7]
    assert config().seeds == [0, 1, 2, 3, 4]
    short = config("-n", "500", "-params", "learning_starts:10", "-f", "elsewhere", "-tb", "tb", "--verbose", "0")
    long = config(
        "--n-timesteps", "500", "--hyperparams", "learning_starts:10", "--out", "elsewhere", "--tensorboard-log", "tb"
    )
    assert (short.n_timesteps, short.hyperparams, short.out, short.tensorboard_log) == (
        500,
        {"learning_starts": 10},
        "elsewhere",
        "tb",
    )
    assert (long.n_timesteps, long.hyperparams, long.out, long.tensorboard_log) == (
        500,
        {"learning_starts": 10},
        "elsewhere",
        "tb",
    )
    assert (short.verbose, short.progress, long.verbose, long.progress) == (0, False, 1, True)


def test_tensorboard_folder_reaches_each_runs_experiment_manager(tmp_path):
    from sb3_ablation.study.plan.config import resolve_hyperparams
    from sb3_ablation.study.run.execute import make_manager

    config = StudyConfig(envs=[ENV], variants=["td3"], seeds=SeedList([4]), out=str(tmp_path), tensorboard_log="tb")
    (task,) = make_tasks(config, config.variant_objects, resolve_hyperparams(config, config.variant_objects))
    assert task.tensorboard_log == str(Path("tb") / "td3" / "seed_4")
    assert make_manager(task).tensorboard_log == str(Path("tb") / "td3" / "seed_4" / ENV)  # rl_zoo3 adds the env
    without = StudyConfig(envs=[ENV], variants=["td3"], seeds=1, out=str(tmp_path))
    (task,) = make_tasks(without, without.variant_objects, resolve_hyperparams(without, without.variant_objects))
    assert make_manager(task).tensorboard_log is None  # as without -tb in train


def test_shipped_studies_are_found_by_name_and_listed_in_help(capsys):
    from sb3_ablation.cli.study import study_main

    assert set(shipped_studies()) == {
        "pendulum",
        "multitask",
        "td3_paper_mujoco",
        "pendulum_factorial",
        "pendulum_sequential",
        "hopper_factorial",
        "pendulum_2x6",
        "hopper_half_fraction",
        "pendulum_tuned",
        "hopper_paper_300k_pilot",
        "hopper_paper_300k",
        "hopper_paper_1m",
    }
    assert find_config_file("pendulum") == shipped_studies()["pendulum"]
    assert load_config_file("pendulum") == load_config_file(shipped_studies()["pendulum"])
    with pytest.raises(SystemExit):
        study_main(["--help"])
    help_text = capsys.readouterr().out
    flowing = " ".join(help_text.split())
    for name, path in shipped_studies().items():
        assert f"  {name} " in help_text
        # each description is its file's first sentence, whole (not cut at the end of a comment line)
        description = first_sentence(path.read_text())
        assert description.endswith((".", "?", ":")) and len(description.split()) >= 8, description
        assert f"{name} {description}" in flowing


def test_a_tuned_zoo_file_feeds_a_study(tmp_path):
    tuned = tmp_path / "best_Pendulum-v1.yml"
    tuned.write_text(
        "Pendulum-v1:\n  n_timesteps: 20000\n  policy: MlpPolicy\n  learning_rate: 0.0007\n  clipped_double_q: true\n"
        "  policy_kwargs: dict(net_arch=[32, 32])\n"
    )
    settings = load_config_file(tuned)
    assert settings["envs"] == [ENV]
    # the switches are the variants' to set
    assert settings["env_hyperparams"][ENV] == {
        "n_timesteps": 20000,
        "policy": "MlpPolicy",
        "learning_rate": 0.0007,
        "policy_kwargs": "dict(net_arch=[32, 32])",
    }
    from sb3_ablation.study.plan.config import resolve_hyperparams

    config = StudyConfig(**settings, variants=["leave-one-out"], seeds=1, out=str(tmp_path / "out"))
    resolved = resolve_hyperparams(config, config.variant_objects)
    assert resolved[ENV]["ablatable_td3"]["learning_rate"] == 0.0007


def test_unreadable_run_record_is_named(tmp_path):
    from sb3_ablation.study.analyse.results import load_study

    shutil.copytree(
        REPO / "docs" / "studies" / "pendulum", tmp_path / "study", ignore=shutil.ignore_patterns("*.zip", "*.png")
    )
    record = tmp_path / "study" / "runs" / ENV / "td3" / "seed_2.json.gz"
    record.write_bytes(record.read_bytes()[:100])
    (entry,) = unreadable_runs(tmp_path / "study", [ENV], ["td3"])
    assert (entry["env"], entry["variant"], entry["seed"], entry["status"]) == (ENV, "td3", 2, "unreadable")
    data = load_study(tmp_path / "study")
    (failed,) = [r for r in data.failed if r["seed"] == 2 and r["variant"] == "td3"]
    assert "unreadable run record" in failed["error"] and str(record) in failed["error"]
    assert (ENV, "td3", 2) not in data.missing


def test_report_on_a_study_with_an_unreadable_record_writes_it_and_exits_1_with_one_line(tmp_path, capsys):
    from sb3_ablation.cli.study import report_main

    shutil.copytree(
        REPO / "docs" / "studies" / "pendulum", tmp_path / "study", ignore=shutil.ignore_patterns("*.zip", "*.png")
    )
    record = tmp_path / "study" / "runs" / ENV / "td3" / "seed_2.json.gz"
    record.write_bytes(record.read_bytes()[:100])
    assert report_main([str(tmp_path / "study"), "--reps", "100"]) == 1
    assert capsys.readouterr().err == (
        f"sb3-ablation report: 1 run record is unreadable and left out of the report; the first: unreadable run record "
        f"{record} (corrupt or truncated); rerunning the study redoes the run\n"
    )
    assert "unreadable run record" in (tmp_path / "study" / "report.md").read_text()


def test_bench_filter_drops_only_the_profiler_lines():
    code = textwrap.dedent(
        """
        import os, sys
        from sb3_ablation.cli import without_stderr_lines
        with without_stderr_lines(b"USDT:"):
            held = os.dup(2)  # as torch's profiler keeps one: the filter must still end
            os.write(2, b"USDT:2026 profiler_start\\nkept 1\\n")
            print("kept 2", file=sys.stderr)
            os.write(held, b"USDT: from the copy\\npartial")
        print(" line", file=sys.stderr)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert (result.returncode, result.stderr) == (0, "kept 1\nkept 2\npartial line\n")
