"""Command lines of ``sb3-ablation study``, ``sb3-ablation report`` and ``sb3-ablation demo``."""

# Start-up time: the study's run, analyse, render and store layers and rl_zoo3 are imported in the functions that
# need them, so that `--help` and usage errors load none of them (rl_zoo3 takes ~0.4 s, the analysis ~1 s).

from __future__ import annotations

import argparse
import importlib.util
import re
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from sb3_ablation.cli import OneLineArgumentParser
from sb3_ablation.study.plan.analysis_plan import OUTCOMES, AnalysisPlan, PlanError, check_plan_envs, parse_margins
from sb3_ablation.study.plan.config import (
    BACKENDS,
    SeedList,
    StudyConfig,
    StudyError,
    command_defaults,
    load_config_file,
    shipped_studies,
)

EXIT_OK, EXIT_RUNS_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143
#: the width the shipped studies' descriptions are wrapped to in ``study --help``
HELP_WIDTH = 100

# The README's main job: every run of TD3 and its six leave-one-out variants on Pendulum-v1, two seeds, then the
# report; about 6 minutes on 2 cores. rl-zoo's Pendulum hyperparameters except smaller networks, fewer steps and an
# earlier start of learning (the zoo's 10k random steps would leave no training in 10k steps).
DEMO: dict[str, Any] = {
    "envs": ["Pendulum-v1"],
    "variants": ["leave-one-out"],
    "seeds": 2,
    "n_timesteps": 10_000,
    "eval_freq": 1_000,
    "eval_episodes": 5,
    "hyperparams": {"policy_kwargs": "dict(net_arch=[64, 64])", "learning_starts": 1_000},
}


def first_sentence(text: str) -> str:
    """The first sentence of a study file's opening comment (its first paragraph of ``#`` lines), whole."""
    paragraph: list[str] = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        words = line.lstrip("#").strip()
        if not words:
            if paragraph:
                break
            continue
        paragraph.append(words)
    joined = " ".join(paragraph)
    # a sentence ends at . ! or ? and a space, except after "e.g." and the like
    return re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<!etc\.)(?<!vs\.)(?<=[.!?])\s+", joined, maxsplit=1)[0]


def _shipped_studies_help() -> str:
    studies = shipped_studies()
    width = max(map(len, studies), default=0) + 4
    lines = ["shipped studies (--config NAME):"]
    for name, path in studies.items():
        text = textwrap.wrap(first_sentence(path.read_text()), width=HELP_WIDTH - width, break_on_hyphens=False)
        lines.append(f"  {name:<{width - 2}}{text[0] if text else ''}")
        lines += [" " * width + line for line in text[1:]]
    return "\n".join(lines)


def _study_parser() -> argparse.ArgumentParser:
    # rl_zoo3's train parser describes one (algo, env, seed) run and its log folder; a study takes lists of envs,
    # variants and seeds plus execution settings, so it has its own parser, with rl_zoo3's short flags where they mean
    # the same (-n, -params, -f, -tb, --verbose) and the same key:value syntax and evaluation for --hyperparams
    parser = OneLineArgumentParser(
        prog="sb3-ablation study",
        description="Run an ablation study: every (env, variant, seed) is one run, trained and evaluated in parallel. "
        "Rerunning the same command resumes it (finished runs are skipped).",
        epilog=_shipped_studies_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        help="a shipped study's name (listed below) or a study YAML file; a tuned best_<env>.yml written by "
        "`train -optimize` or `export` works too (its envs with its hyperparameters). Flags override its settings",
    )
    parser.add_argument("--env", "--envs", dest="envs", nargs="+", help="Gymnasium env ids, e.g. Pendulum-v1")
    parser.add_argument(
        "--variants",
        nargs="+",
        help="presets (leave-one-out, factorial, ddpg-to-td3) and/or names: td3, no_<switch>, combinations joined "
        "with '+', ddpg, ddpg+<switch>, ref_ddpg, ref_sb3_td3 (default: leave-one-out)",
    )
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        help="a count (--seeds 3: seeds 0, 1, 2) or two or more seeds (--seeds 3 7); default: 5",
    )
    seeds.add_argument("--seed-list", nargs="+", type=int, metavar="SEED", help="exactly these seeds, even one: --seed-list 7")
    parser.add_argument("-n", "--n-timesteps", type=int, help="training steps per run (default: the zoo's for each env)")
    parser.add_argument("--eval-freq", type=int, help="evaluate every this many steps (default: n_timesteps / 20)")
    parser.add_argument("--eval-episodes", type=int, help="deterministic episodes per evaluation (default: 10)")
    parser.add_argument("--eval-max-episode-steps", type=int, help="cut evaluation episodes at this many steps")
    parser.add_argument(
        "-params",
        "--hyperparams",
        nargs="+",
        metavar="KEY:VALUE",
        help="overrides of the zoo hyperparameters for every env, rl-zoo syntax: learning_starts:1000 "
        'policy_kwargs:"dict(net_arch=[64, 64])"',
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a short try: learning_starts a tenth of the budget given with -n (e.g. -n 3000 --quick: learning_starts "
        "300), so that a budget below the zoo's learning_starts still trains (as train --quick)",
    )
    parser.add_argument("--workers", type=int, help="runs in parallel (default: one per core)")
    parser.add_argument("--backend", choices=BACKENDS, help="local processes (default) or a Ray cluster")
    parser.add_argument("--address", help="address of an existing Ray cluster (default with --backend ray: a local Ray)")
    parser.add_argument("--device", help="torch device of each run (default: cpu)")
    parser.add_argument(
        "--engine",
        help="process: each run in its own process (default); batched: the seeds of one env and variant trained "
        "together in one process with batched networks (more runs per hour for small networks; groups checkpoint "
        "and resume like runs); batched-compiled: the batched engine with its critic and target updates compiled by "
        "torch.compile (a declared setting: other last bits than batched)",
    )
    parser.add_argument(
        "--group-size",
        type=int,
        metavar="N",
        help="batched engine: up to N runs per process, variants mixed where they differ only in clipped_double_q, "
        "target_networks, target_policy_smoothing, delayed_policy_update or deterministic_policy (default: one "
        "group per env and variant; with --device cuda, a factorial design or fraction in one group per value of "
        "replay_buffer); a run's record is the same in any group",
    )
    parser.add_argument(
        "--checkpoint-freq",
        type=int,
        metavar="STEPS",
        help="checkpoint each run every STEPS steps (mid-episode too); a killed run resumes from its "
        "last checkpoint with the same result (default: 50000; 0: no checkpoints)",
    )
    parser.add_argument("-f", "--out", help="output folder (default: runs/study)")
    parser.add_argument(
        "-tb",
        "--tensorboard-log",
        metavar="FOLDER",
        help="tensorboard logs of the runs in FOLDER/<variant>/seed_<k>/<env> (needs tensorboard)",
    )
    parser.add_argument(
        "--keep-models", action="store_true", help="keep each run's final model (seed_<k>.zip; default: records only)"
    )
    parser.add_argument(
        "--amend-plan",
        metavar="REASON",
        help="change the analysis plan of a study folder that has runs: the change is kept in study.json as an "
        "amendment with REASON and the date (without it, such a change is refused)",
    )
    parser.add_argument("--report", action="store_true", help="write the report when the study is done")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--verbose",
        type=int,
        choices=(0, 1, 2),
        default=1,
        help="0: the summary only; 1 (default): also the progress bar and a line per failed or resumed run; "
        "2: also a line per finished run",
    )
    return parser


def config_from_args(args: argparse.Namespace) -> StudyConfig:
    """File settings first, then the flags given on the command line, then defaults."""
    from sb3_ablation.zoo.hyperparams import ZooConfigError
    from sb3_ablation.zoo.train import parse_key_values, quick_learning_starts

    try:
        hyperparams = parse_key_values("--hyperparams", args.hyperparams)
    except ZooConfigError as error:
        raise StudyError(str(error)) from None
    settings: dict[str, Any] = load_config_file(args.config) if args.config else {}
    if args.quick:  # as train --quick
        budget = args.n_timesteps if args.n_timesteps is not None else settings.get("n_timesteps")
        if budget is None:
            raise StudyError("--quick makes a short try of the budget given with -n: add -n, e.g. -n 3000 --quick")
        if "learning_starts" in hyperparams:
            raise StudyError("--quick sets learning_starts, which --hyperparams sets too: give one of them")
        hyperparams["learning_starts"] = quick_learning_starts(int(budget))
    file_envs = list(settings.get("envs") or [])
    for name in (
        "envs",
        "variants",
        "n_timesteps",
        "eval_freq",
        "eval_episodes",
        "eval_max_episode_steps",
        "workers",
        "checkpoint_freq",
        "group_size",
    ):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if args.keep_models:
        settings["keep_models"] = True
    for name in ("backend", "address", "device", "engine", "out", "tensorboard_log", "amend_plan"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if args.envs is not None and settings.get("env_hyperparams"):
        # --env picks tasks of a config; the file's per-env settings of the tasks not picked do not apply
        settings["env_hyperparams"] = {env: hp for env, hp in settings["env_hyperparams"].items() if env in args.envs}
    if args.envs is not None and isinstance(settings.get("analysis"), dict):
        # likewise the plan's margins and failure returns of the file's tasks not picked (an env the file does not
        # have stays, for StudyConfig to name)
        not_picked = set(file_envs) - set(args.envs)
        analysis = dict(settings["analysis"])
        for key in ("margins", "failure_returns"):
            if isinstance(analysis.get(key), dict):
                analysis[key] = {env: value for env, value in analysis[key].items() if env not in not_picked}
        settings["analysis"] = analysis
    if args.seeds is not None:
        settings["seeds"] = args.seeds
    if args.seed_list is not None:
        settings["seeds"] = SeedList(args.seed_list)
    if hyperparams:
        settings["hyperparams"] = {**(settings.get("hyperparams") or {}), **hyperparams}
    settings = {**command_defaults(), **settings}
    settings["progress"] = not args.no_progress and args.verbose >= 1
    settings["verbose"] = args.verbose
    if settings.get("tensorboard_log") and importlib.util.find_spec("tensorboard") is None:
        raise StudyError("-tb needs tensorboard, which is not installed: pip install 'sb3-ablation[tensorboard]'")
    return StudyConfig(**settings)


def _run(config: StudyConfig, write_report_after: bool, quick: bool = False) -> int:
    from sb3_ablation.study import conduct
    from sb3_ablation.study.analyse.feasibility import preflight
    from sb3_ablation.study.flow import declared_plan

    started = time.time()
    # SIGTERM (kill, a scheduler's stop) ends the study as Ctrl-C does: workers stopped, lock released, one line
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        if not config.tuning:  # before any run: the runs, their time, and whether the seeds can reach a verdict
            said = preflight(config, declared_plan(config), quick, timed=config.verbose >= 1)
            for line in said.lines if config.verbose >= 1 else []:
                print(line)
            if said.refusal is not None:
                raise StudyError(said.refusal)
        result = conduct(config)  # plain, tuned, or in group-sequential looks
    except KeyboardInterrupt as stop:
        how = "terminated (SIGTERM)" if isinstance(stop, Terminated) else "interrupted"
        print(
            f"\n{how}: finished runs are kept in {config.out}; rerun the same command to do the rest",
            file=sys.stderr,
        )
        return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"study time: {time.time() - started:.0f} s")
    if write_report_after:
        _report(config.out)
    else:
        print(f"next: sb3-ablation report {config.out}")
    return EXIT_RUNS_FAILED if result.failed else EXIT_OK


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated


def _report(out: str, reps: int | None = None, seed: int | None = None, **plan_changes) -> Path:
    from sb3_ablation.study import write_report
    from sb3_ablation.study.render.report import DEFAULT_REPS, DEFAULT_SEED

    path = write_report(out, reps=reps or DEFAULT_REPS, seed=DEFAULT_SEED if seed is None else seed, **plan_changes)
    print(f"report: {path} (figures in {path.parent / 'figures'})")
    return path


def study_main(argv: list[str] | None = None) -> int:
    """``sb3-ablation study``: run or resume a study. Exit code 1 when runs failed, 2 on bad input."""
    args = _study_parser().parse_args(argv)
    try:
        config = config_from_args(args)
        return _run(config, args.report, args.quick)
    except StudyError as error:
        print(f"sb3-ablation study: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def report_main(argv: list[str] | None = None) -> int:
    """
    ``sb3-ablation report <out>``: write ``<out>/report.md``, its figures and ``<out>/evaluations.csv``; with
    ``--export zoo DIR`` also rl-zoo's layout (:mod:`~sb3_ablation.study.render.exports`).
    """
    parser = OneLineArgumentParser(prog="sb3-ablation report", description="Write the statistical report of a study.")
    parser.add_argument("out", help="the study's output folder")
    parser.add_argument("--reps", type=int, help="bootstrap resamples (default: 10000)")
    parser.add_argument("--seed", type=int, help="bootstrap seed (default: 0)")
    # the analysis plan: the report says where these change the plan the study declared
    parser.add_argument("--primary", choices=OUTCOMES, help="primary outcome (default: the study's plan, final_window)")
    parser.add_argument("--secondary", nargs="*", choices=OUTCOMES, help="secondary outcomes")
    parser.add_argument("--alpha", type=float, help="family-wise level (default: the study's plan, 0.05)")
    parser.add_argument("--power", type=float, help="power of the minimum detectable effect (default: 0.8)")
    parser.add_argument("--final-fraction", type=float, help="share of training the primary outcome averages (0.1)")
    parser.add_argument("--margin", action="append", metavar="ENV=VALUE", help="equivalence margin of an env (repeatable)")
    parser.add_argument(
        "--export", nargs=2, metavar=("FORMAT", "DIR"),
        help="also write the evaluations in another tool's layout; zoo: rl-zoo's DIR/<variant>/<env>_<seed>/evaluations.npz, "
        "for python -m rl_zoo3.plots.all_plots -f DIR",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.reps is not None and args.reps < 100:
        print(f"sb3-ablation report: --reps must be at least 100, got {args.reps}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from sb3_ablation.study.render.exports import EXPORT_FORMATS, export_zoo, unwritable

    if args.export:  # checked before the report, which takes a while: a bad --export writes nothing
        kind, folder = args.export
        problem = f"format {kind!r} is not one of: {', '.join(EXPORT_FORMATS)}" if kind not in EXPORT_FORMATS else None
        if (problem := problem or unwritable(folder)) is not None:
            print(f"sb3-ablation report: --export {kind} {folder}: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        margins = parse_margins(args.margin)
        if margins:
            from sb3_ablation.study.store.manifest import read_manifest

            check_plan_envs(AnalysisPlan(margins=margins), read_manifest(args.out)["envs"], where="--margin")
        plan = {
            "primary": args.primary, "secondary": args.secondary, "alpha": args.alpha, "power": args.power,
            "final_fraction": args.final_fraction, "margins": margins or None,
        }  # fmt: skip
        _report(args.out, args.reps, args.seed, **plan)
    except (StudyError, PlanError) as error:
        print(f"sb3-ablation report: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.export:
        try:
            from sb3_ablation.study.analyse.tidy import zoo_runs

            written = export_zoo(zoo_runs(args.out), args.export[1])
        except OSError as error:  # checked above, yet it could not be written after all
            print(f"sb3-ablation report: --export {kind} {folder}: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        variants = " ".join(dict.fromkeys(path.parent.parent.name for path in written))
        envs = " ".join(dict.fromkeys(path.parent.name.rsplit("_", 1)[0] for path in written))
        print(f"rl-zoo export: {len(written)} runs in {folder}; plot them with")
        print(f"  python -m rl_zoo3.plots.all_plots -f {folder} -a {variants} -e {envs}")
    return _unreadable_records(args.out)


def _unreadable_records(out: str) -> int:
    """Say in one line (stderr) that run records could not be read, which the report leaves out: exit status 1."""
    from sb3_ablation.study.store.runs import unreadable_runs

    unreadable = unreadable_runs(out, [], [])
    if not unreadable:
        return EXIT_OK
    records = "1 run record is" if len(unreadable) == 1 else f"{len(unreadable)} run records are"
    print(
        f"sb3-ablation report: {records} unreadable and left out of the report; the first: {unreadable[0]['error']}",
        file=sys.stderr,
    )
    return EXIT_RUNS_FAILED


def demo_main(argv: list[str] | None = None) -> int:
    """``sb3-ablation demo``: a small leave-one-out study on Pendulum-v1 plus its report (under 10 minutes on 2 cores)."""
    parser = OneLineArgumentParser(
        prog="sb3-ablation demo",
        description="TD3 and its six leave-one-out variants on Pendulum-v1 (10k steps, [64, 64] networks, 2 seeds), "
        "then the report. Rerunning resumes.",
    )
    parser.add_argument("--out", default="runs/demo", help="output folder (default: runs/demo)")
    parser.add_argument("--workers", type=int, help="runs in parallel (default: one per core)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        config = StudyConfig(**DEMO, out=args.out, workers=args.workers, progress=not args.no_progress)
        print(f"demo: {len(config.variants)} variants x {len(config.seeds)} seeds on Pendulum-v1, report in {args.out}")
        return _run(config, write_report_after=True)
    except StudyError as error:
        print(f"sb3-ablation demo: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
