"""A study with a ``tuning:`` section (:mod:`~sb3_ablation.study.plan.tuning`): every variant tuned for itself, then the
confirmatory seeds run with the study's hyperparameters and with each variant's own.

Three phases, each resumable:

1. **Tuning**: for every (env, variant), an Optuna study run by rl-zoo's ``ExperimentManager`` exactly as
   ``sb3-ablation train -optimize`` runs one (:func:`sb3_ablation.zoo.train.main`): ``--trial-seeds`` over the
   tuning seeds with the declared aggregate, the declared sampler and pruner, ``--max-total-trials`` as the budget,
   the study's hyperparameters and the variant's switches as ``--hyperparams``, and a sampler restricted to the
   declared search space (less what the variant does not use). Its journal storage is
   ``<out>/tuning/<env>/<variant>/optuna.log``; its console output goes to ``console.txt`` next to it, and the best
   trial as a zoo entry to ``ablatable_td3/best_<env>.yml``. The (env, variant)s are tuned in parallel on the
   study's backend (one worker each). A rerun continues each Optuna study from its storage: its finished trials are
   kept and count towards the budget, and a trial left running by an interrupted invocation is marked failed (it
   does not count) before the study continues. ``study.json`` records the chosen values of each (env, variant) as it
   finishes (``"tuned"``; :func:`~sb3_ablation.study.store.manifest.record_tuning`).
2. **Confirmatory runs with the study's hyperparameters**: the study itself (:func:`~sb3_ablation.study.run.runner.run_study`).
3. **Confirmatory runs with each variant's own**: the same seeds, variants and settings in the nested study
   ``<out>/tuned`` (:data:`TUNED_FOLDER`), whose ``variant_hyperparams`` are the chosen values (pinned in its
   ``study.json``). A variant whose tuning failed on some env is left out of it (and named).

Holding ``<out>``'s lock while tuning keeps a second invocation from continuing the same Optuna studies at once.
"""

# Optuna and sb3_ablation.zoo (rl_zoo3, heavy) are imported in the functions that use them: `sb3-ablation study`
# imports this module before it checks the study's envs, whose one-line errors should not wait for them.

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sb3_ablation.common.utils import plural
from sb3_ablation.study.plan.config import (
    ResolvedHyperparams,
    SeedList,
    StudyConfig,
    StudyError,
    check_envs,
    hyperparams_of,
    resolve_hyperparams,
)
from sb3_ablation.study.plan.tuning import NOISE_TYPE, TUNED_FOLDER, TuningPlan
from sb3_ablation.study.plan.variants import ABLATABLE_ALGO, Variant
from sb3_ablation.study.run.backends import BY_NAME as BACKENDS
from sb3_ablation.study.run.backends import default_workers
from sb3_ablation.study.run.recording import library_versions
from sb3_ablation.study.run.runner import StudyResult, check_before_writing, run_study
from sb3_ablation.study.store.lock import study_lock
from sb3_ablation.study.store.manifest import open_manifest, read_manifest, record_tuning, tuned_hyperparams
from sb3_ablation.study.store.runs import safe_name

#: the Optuna studies, under ``<out>``
TUNING_FOLDER = "tuning"
#: the name of the Optuna study in each (env, variant)'s storage
OPTUNA_STUDY = "tuning"


def tuning_folder(out: str | os.PathLike[str], env: str, variant: str) -> Path:
    """One (env, variant)'s tuning: ``<out>/tuning/<env>/<variant>``."""
    return Path(out) / TUNING_FOLDER / safe_name(env) / safe_name(variant)


def storage_path(out: str | os.PathLike[str], env: str, variant: str) -> Path:
    """One (env, variant)'s Optuna journal storage: ``<out>/tuning/<env>/<variant>/optuna.log``."""
    return tuning_folder(out, env, variant) / "optuna.log"


def tuned_folder(out: str | os.PathLike[str]) -> Path:
    """The nested study of the runs with each variant's own hyperparameters: ``<out>/tuned``."""
    return Path(out) / TUNED_FOLDER


@dataclass(frozen=True)
class TuningJob:
    """
    One (env, variant)'s tuning, as a worker runs it.

    :param env: the env id
    :param variant: the variant's name
    :param argv: the ``sb3-ablation train -optimize`` arguments
    :param search_space: the variant's search space
    :param storage: the journal storage file
    :param console: the file its console output goes to
    :param n_trials: the budget: a tuning that ends with fewer finished trials was interrupted
    """

    env: str
    variant: str
    argv: tuple[str, ...]
    search_space: dict[str, dict[str, Any]]
    storage: str
    console: str
    n_trials: int = 0


def train_arguments(
    config: StudyConfig, plan: TuningPlan, variant: Variant, env: str, hyperparams: dict[str, Any], folder: Path
) -> list[str]:
    """
    The ``sb3-ablation train -optimize`` arguments of one (env, variant)'s tuning.

    :param hyperparams: the study's overrides for the env with the variant's switches (``--hyperparams``)
    :param folder: the (env, variant)'s tuning folder
    """
    module, _, name = env.rpartition(":")
    argv = [
        "--algo", ABLATABLE_ALGO, "--env", name, "-optimize",
        "--n-trials", str(plan.n_trials), "--max-total-trials", str(plan.n_trials),
        "--trial-seeds", str(len(plan.seeds)), "--trial-aggregate", plan.aggregate, "--seed", str(plan.seeds[0]),
        "--sampler", plan.sampler, "--pruner", plan.pruner, "--n-evaluations", str(plan.n_evaluations),
        "--eval-episodes", str(plan.eval_episodes or config.eval_episodes),
        "--storage", str(storage_path(config.out, env, variant.name)), "--study-name", OPTUNA_STUDY,
        "-f", str(folder), "--no-optim-plots", "--verbose", "0", "--device", config.device,
    ]  # fmt: skip
    if plan.n_startup_trials is not None:
        argv += ["--n-startup-trials", str(plan.n_startup_trials)]
    if module:
        argv += ["--gym-packages", module]
    # rl_zoo3's key:value items, each value a Python expression (as the study's own --hyperparams)
    return [*argv, "--hyperparams", *(f"{key}:{value!r}" for key, value in hyperparams.items())]


def check_tuning(config: StudyConfig, variants: list[Variant], resolved: ResolvedHyperparams) -> None:
    """
    :raise StudyError: ``noise_std`` is declared where the study's hyperparameters have another action noise than
        rl-zoo's normal one (the search space would change the noise type, not just its std)
    """
    plan = TuningPlan.from_dict(config.tuning)
    if "noise_std" not in plan.search_space:
        return
    for env in config.envs:
        for variant in variants:
            noise_type = hyperparams_of(config, resolved, variant, env).get("noise_type")
            if noise_type != NOISE_TYPE:
                raise StudyError(
                    f"tuning.search_space.noise_std is the std of normal action noise (noise_type: {NOISE_TYPE}), but "
                    f"{variant.name} on {env} has noise_type {noise_type!r}; set noise_type: {NOISE_TYPE} in hyperparams "
                    "or leave noise_std out of the search space"
                )


def _optuna_study(storage: str | os.PathLike[str]) -> Any:
    """The (env, variant)'s Optuna study, or ``None`` when its storage holds none yet."""
    import optuna

    from sb3_ablation.zoo.export import optuna_storage

    if not Path(storage).is_file():
        return None
    try:
        return optuna.load_study(storage=optuna_storage(str(storage), create=False), study_name=OPTUNA_STUDY)
    except KeyError:  # the file exists, the study does not (yet)
        return None


def trial_counts(storage: str | os.PathLike[str]) -> dict[str, int]:
    """The trials of an (env, variant)'s Optuna study, by state (``complete``, ``pruned``, ``fail``, ``running``)."""
    study = _optuna_study(storage)
    counts: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False) if study is not None else []:
        counts[trial.state.name.lower()] = counts.get(trial.state.name.lower(), 0) + 1
    return counts


def finished_trials(counts: dict[str, int]) -> int:
    """The trials that count towards the budget (as rl_zoo3's ``--max-total-trials`` counts them, less running ones)."""
    return counts.get("complete", 0) + counts.get("pruned", 0)


def release_stale_trials(storage: str | os.PathLike[str]) -> int:
    """
    Mark as failed the trials an interrupted invocation left running (none runs now: the study's lock is held), so
    that they do not count towards ``--max-total-trials`` and the budget is spent on trials that finish.

    :return: how many
    """
    import optuna

    study = _optuna_study(storage)
    if study is None:
        return 0
    stale = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for trial in stale:
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    return len(stale)


def tuning_result(storage: str | os.PathLike[str]) -> dict[str, Any]:
    """
    The chosen values of one (env, variant): the best trial of its Optuna study.

    :return: ``hyperparams`` (the best trial's parameters as zoo hyperparameters), ``params`` (as Optuna stores
        them), ``value``, ``trial`` (its number), ``seed_values`` (each tuning seed's value) and ``trials`` (the
        counts by state)
    :raise StudyError: no trial completed
    """
    from sb3_ablation.zoo.hyperparams_opt import convert_declared_params
    from sb3_ablation.zoo.trials import SEED_VALUES_ATTR

    counts = trial_counts(storage)
    if not counts.get("complete"):
        raise StudyError(f"no trial of {storage} completed ({counts or 'no trials'})")
    best = _optuna_study(storage).best_trial
    return {
        "hyperparams": convert_declared_params(dict(best.params)),
        "params": dict(best.params),
        "value": best.value,
        "trial": best.number,
        "seed_values": best.user_attrs.get(SEED_VALUES_ATTR),
        "trials": counts,
    }


def tuning_job(config: StudyConfig, plan: TuningPlan, variant: Variant, env: str) -> TuningJob:
    """One (env, variant)'s tuning: its ``train -optimize`` arguments, search space, storage and budget."""
    folder = tuning_folder(config.out, env, variant.name)
    hyperparams = {**config.overrides_for(env), **config.variant_overrides(variant.name, env), **variant.switches}
    argv = train_arguments(config, plan, variant, env, hyperparams, folder)
    storage = storage_path(config.out, env, variant.name)
    space = plan.space_for(variant.switches)
    return TuningJob(env, variant.name, tuple(argv), space, str(storage), str(folder / "console.txt"), plan.n_trials)


def tune(job: TuningJob) -> dict[str, Any]:
    """
    Run one (env, variant)'s tuning in a worker: ``sb3-ablation train -optimize`` with its arguments and search space.

    :return: ``env``, ``variant`` and its :func:`tuning_result`, or ``error`` (one line)
    """
    import optuna

    from sb3_ablation.zoo.train import main as train_main

    # Optuna's per-trial lines are quiet here (console.txt has rl_zoo3's); restored after, for a caller in this process
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    Path(job.console).parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(job.console, "a") as console, contextlib.redirect_stdout(console), contextlib.redirect_stderr(console):
            status = train_main(list(job.argv), search_space=job.search_space)
    finally:
        optuna.logging.set_verbosity(verbosity)
    if status != 0:
        lines = Path(job.console).read_text().strip().splitlines()
        return failed_tuning(job, lines[-1] if lines else f"train -optimize exited with status {status}")
    finished = finished_trials(trial_counts(job.storage))
    if finished < job.n_trials:
        # rl_zoo3's optimisation swallows KeyboardInterrupt and goes on to report its best trial: an interrupted
        # tuning must not choose hyperparameters from part of its budget
        return failed_tuning(job, f"interrupted after {finished} of {job.n_trials} trials; rerun the study to finish it")
    try:
        return {"env": job.env, "variant": job.variant, **tuning_result(job.storage)}
    except StudyError as error:
        return failed_tuning(job, str(error))


def failed_tuning(job: TuningJob, error: str) -> dict[str, Any]:
    """The result of a tuning that failed (its worker died, or no trial completed)."""
    return {"env": job.env, "variant": job.variant, "error": error}


def tune_variants(
    config: StudyConfig, variants: list[Variant], resolved: ResolvedHyperparams, log: Callable[[str], Any] = print
) -> list[str]:
    """
    Tune every (env, variant) whose Optuna study has not used its budget yet, in parallel on the study's backend;
    record each result in ``study.json`` as it arrives (also those done before).

    :return: one line per (env, variant) whose tuning failed
    """
    plan = TuningPlan.from_dict(config.tuning)
    jobs: list[TuningJob] = []
    done: dict[str, dict[str, dict[str, Any]]] = {}
    failed: list[str] = []
    for env in config.envs:
        for variant in variants:
            storage = storage_path(config.out, env, variant.name)
            released = release_stale_trials(storage)
            if released and config.verbose >= 1:
                log(f"tuning {env} {variant.name}: {plural(released, 'trial')} left running by an interrupted run: failed")
            if finished_trials(trial_counts(storage)) >= plan.n_trials:  # its budget is spent
                try:
                    done.setdefault(env, {})[variant.name] = tuning_result(storage)
                except StudyError as error:  # every trial pruned: nothing to choose from
                    failed.append(f"tuning {env} {variant.name}: {error}")
                continue
            jobs.append(tuning_job(config, plan, variant, env))
    if done:
        record_tuning(config.out, done)
    if not jobs:
        if config.verbose >= 1:
            log(
                f"tuning: every (env, variant) has used its {plural(plan.n_trials, 'trial')} "
                f"(in {Path(config.out) / TUNING_FOLDER})"
            )
        return failed
    workers = min(config.workers or default_workers(), len(jobs))
    os.environ["OMP_NUM_THREADS"] = "1"  # (the workers inherit it: one OpenMP thread each)
    backend = BACKENDS[config.backend]
    log(
        f"tuning {plural(len(jobs), '(env, variant)', '(env, variant)s')}: {plural(plan.n_trials, 'trial')} each over "
        f"{', '.join(plan.search_space)}, tuning seeds {plan.seeds[0]}-{plan.seeds[-1]}, on "
        f"{backend.where(workers, config.address)} ({sum(map(len, done.values()))} tuned already); Optuna "
        f"studies in {Path(config.out) / TUNING_FOLDER}"
    )

    def on_result(result: dict[str, Any]) -> None:
        name = f"{result['env']} {result['variant']}"
        if "error" in result:
            failed.append(f"tuning {name}: {result['error']}")
            log(f"tuning failed: {failed[-1]}")
            return
        record_tuning(
            config.out, {result["env"]: {result["variant"]: {k: v for k, v in result.items() if k not in ("env", "variant")}}}
        )
        chosen = ", ".join(
            f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}" for key, value in result["params"].items()
        )
        log(f"tuned {name}: best trial {result['trial']} (value {result['value']:.4g}): {chosen}")

    backend.run(jobs, workers, config.address, on_result, tune, failed_tuning)
    return failed


def tuned_config(config: StudyConfig, manifest: dict[str, Any]) -> tuple[StudyConfig | None, list[str]]:
    """
    The nested study of the confirmatory runs with each variant's own hyperparameters.

    :param config: the study's settings
    :param manifest: its manifest, with the tuning results
    :return: its settings (the variants tuned on every env of the study; ``None``: no variant is) and the variants
        left out
    """
    chosen = tuned_hyperparams(manifest)
    complete = [v for v in config.variants if all(env in chosen.get(v, {}) for env in config.envs)]
    left_out = [v for v in config.variants if v not in complete]
    if not complete:
        return None, left_out
    tuned = dataclasses.replace(
        config,
        seeds=SeedList(config.seeds),  # (a plain list of one seed would read as a count again)
        out=str(tuned_folder(config.out)),
        variants=complete,
        tuning={},
        variant_hyperparams={v: {env: chosen[v][env] for env in config.envs} for v in complete},
        tensorboard_log=str(Path(config.tensorboard_log) / TUNED_FOLDER) if config.tensorboard_log else None,
    )
    return tuned, left_out


def run_tuned_study(config: StudyConfig, log: Callable[[str], Any] = print) -> StudyResult:
    """
    Run (or resume) a study with a ``tuning:`` section: tuning, then the confirmatory runs with the study's
    hyperparameters, then with each variant's own (see the module docstring).

    :return: the counts of both sets of confirmatory runs together, the failed tunings among the failures
    :raises StudyError: bad settings, or an output folder made with different settings
    """
    check_envs(config.envs)
    variants = config.variant_objects
    resolved = resolve_hyperparams(config, variants)
    check_before_writing(config, variants, resolved)
    check_tuning(config, variants, resolved)
    with study_lock(config.out):
        # the settings, tuning included, are pinned (or checked against the folder's) before anything is tuned
        open_manifest(config, resolved, library_versions())
        failed = tune_variants(config, variants, resolved, log)
    result = run_study(config, log)
    tuned, left_out = tuned_config(config, read_manifest(config.out))
    if left_out:
        log(f"not run with their own hyperparameters (tuning unfinished): {', '.join(left_out)}")
    if tuned is not None:
        log(f"with each variant's own hyperparameters ({tuned.out}):")
        own = run_study(tuned, log)
        result.add(own)
    result.failed += failed
    return result


__all__ = [
    "OPTUNA_STUDY",
    "TUNED_FOLDER",
    "TUNING_FOLDER",
    "TuningJob",
    "check_tuning",
    "release_stale_trials",
    "run_tuned_study",
    "storage_path",
    "trial_counts",
    "tune",
    "tune_variants",
    "tuned_config",
    "tuned_folder",
    "tuning_folder",
    "tuning_result",
]
