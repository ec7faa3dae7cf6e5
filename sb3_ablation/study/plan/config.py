"""Planning a study: its settings (command line or YAML file, validated), resolved hyperparameters, and the runs."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml

from sb3_ablation.common.devices import device_problem
from sb3_ablation.common.suggestions import quoted_with_suggestion
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, PlanError, check_plan_envs
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.plan.tuning import TuningError, TuningPlan
from sb3_ablation.study.plan.variants import Variant, baseline_name, resolve_variants
from sb3_ablation.switches import SWITCHES

BACKENDS = ("local", "ray")
#: process: each run in its own process; batched: the runs of one (env, variant) in one process (BatchedTD3);
#: batched-compiled: the batched engine with its update step compiled by torch.compile (other last bits than eager:
#: a setting of the plan, in its digest, and stated by every record)
ENGINES = ("process", "batched", "batched-compiled")
#: the engines that train groups of runs in one BatchedTD3
BATCHED_ENGINES = ("batched", "batched-compiled")
#: the engines whose records differ from the others' in their arithmetic: the study's ``settings`` (and so its plan's
#: digest) name them, so that a folder is tied to one of them (a plan declared without one keeps its digest)
DECLARED_ENGINES = ("batched-compiled",)
#: default ``checkpoint_freq``: about ten minutes of a [400, 300] TD3 run on one CPU core, a few seconds to save
DEFAULT_CHECKPOINT_FREQ = 50_000

# the settings that define what a run is: an output folder is tied to them (execution settings such as
# workers and backend, and the lists of envs, variants and seeds, may change between invocations)
RUN_SETTINGS = ("n_timesteps", "eval_freq", "eval_episodes", "eval_max_episode_steps", "hyperparams", "env_hyperparams")


#: ``{env_id: {algo: zoo hyperparameters}}``, the hyperparameters of every env and algorithm of a study
ResolvedHyperparams = dict[str, dict[str, dict[str, Any]]]


class StudyError(ValueError):
    """A problem with the study's settings or output folder, reported to the user as one line."""


@dataclass
class StudyConfig:
    """
    Everything a study needs.

    :param envs: Gymnasium environment ids
    :param variants: variant and preset names (see :mod:`sb3_ablation.study.plan.variants`)
    :param seeds: the seeds; each (env, variant, seed) is one run
    :param out: output folder
    :param n_timesteps: training steps per run; ``None`` keeps the zoo's ``n_timesteps`` of each env
    :param eval_freq: evaluate every this many environment steps; ``None``: a twentieth of the training steps
    :param eval_episodes: episodes per evaluation (deterministic policy, separate eval env)
    :param eval_max_episode_steps: cut evaluation episodes at this many steps (``None``: the env's own limit)
    :param hyperparams: overrides applied to every env's zoo hyperparameters (zoo format, e.g. ``learning_starts``)
    :param env_hyperparams: per-env overrides, ``{env_id: {key: value}}``, applied after ``hyperparams``
    :param workers: parallel runs (local: processes; default one per core)
    :param backend: ``local`` or ``ray``
    :param address: address of an existing Ray cluster (``ray`` backend only); ``None`` starts a local Ray
    :param device: torch device of each run
    :param checkpoint_freq: checkpoint each run every this many steps (mid-episode too), so a killed
        run resumes there (0: never; a batched group: every this many steps of each agent)
    :param engine: ``process`` (each run in its own process), ``batched`` (the seeds of one env and variant trained
        together in one process, :mod:`sb3_ablation.study.run.batched`) or ``batched-compiled`` (the same with its
        update step compiled, :mod:`sb3_ablation.batched.update`: a setting the study's folder and plan digest are
        tied to, since its records' last bits differ from the eager engine's)
    :param group_size: the batched engine's most runs per group, variants mixed where they differ only in switches
        an agent may have on its own (``None``: one group per env and variant); a run's record is the same in any group
    :param analysis: the analysis plan of the report (see
        :class:`~sb3_ablation.study.plan.analysis_plan.AnalysisPlan`; empty: the defaults)
    :param progress: show a progress bar
    :param tensorboard_log: folder for the runs' tensorboard logs (``<folder>/<variant>/seed_<k>/<env>``, as rl_zoo3
        adds the env), ``None``: none
    :param keep_models: keep each run's final model next to its record (``seed_<k>.zip``); studies keep none by
        default (a record holds every number the report uses)
    :param verbose: console output: 0 the summary only, 1 also the progress bar and a line per failed or resumed run,
        2 also a line per finished run
    :param tuning: the ``tuning:`` section (:class:`~sb3_ablation.study.plan.tuning.TuningPlan`; empty: no tuning):
        every variant tuned for itself on the tuning seeds, then the confirmatory seeds run with each variant's own
        best hyperparameters too (in ``<out>/tuned``)
    :param variant_hyperparams: ``{variant: {env_id: {key: value}}}``, overrides of one variant's hyperparameters on
        one env, applied after ``env_hyperparams`` (a tuned study's runs take each variant's own this way)
    :param amend_plan: why the analysis plan is changed after runs exist: the change is then kept in ``study.json`` as
        an amendment, with this reason and the date (without it, a study folder with finished runs refuses a plan that
        differs from the one it declared)
    :param study_file: the study file the settings were read from (set by :func:`load_config_file`): when the plan is
        declared, ``study.json`` records it with its git commit, so that anyone can check the plan was committed first
    """

    envs: list[str]
    variants: list[str]
    seeds: list[int]
    out: str
    n_timesteps: int | None = None
    eval_freq: int | None = None
    eval_episodes: int = 10
    eval_max_episode_steps: int | None = None
    hyperparams: dict[str, Any] = field(default_factory=dict)
    env_hyperparams: dict[str, dict[str, Any]] = field(default_factory=dict)
    workers: int | None = None
    backend: str = "local"
    address: str | None = None
    device: str = "cpu"
    checkpoint_freq: int = DEFAULT_CHECKPOINT_FREQ
    engine: str = "process"
    group_size: int | None = None
    analysis: dict[str, Any] = field(default_factory=dict)
    progress: bool = True
    tensorboard_log: str | None = None
    verbose: int = 1
    keep_models: bool = False
    tuning: dict[str, Any] = field(default_factory=dict)
    variant_hyperparams: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    amend_plan: str | None = None
    study_file: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.envs, str):
            self.envs = [self.envs]
        self.envs = list(dict.fromkeys(str(env) for env in (self.envs or [])))
        if not self.envs:
            raise StudyError("no environment given; expected at least one env id, e.g. --env Pendulum-v1")
        self.seeds = parse_seeds(self.seeds)
        check_out_folder(self.out)
        # canonical names: the same configuration asked for twice is run once
        try:
            self.variants = [variant.name for variant in resolve_variants(self.variants)]
        except ValueError as error:
            raise StudyError(str(error)) from None
        for name in ("n_timesteps", "eval_freq", "eval_max_episode_steps"):
            _check_positive_int(name, getattr(self, name), optional=True)
        _check_positive_int("eval_episodes", self.eval_episodes)
        _check_positive_int("workers", self.workers, optional=True)
        if self.checkpoint_freq != 0:
            _check_positive_int("checkpoint_freq", self.checkpoint_freq)
        if self.backend not in BACKENDS:
            raise StudyError(f"unknown backend {self.backend!r}; expected one of {', '.join(BACKENDS)}")
        if self.engine not in ENGINES:
            raise StudyError(f"unknown engine {self.engine!r}; expected one of {', '.join(ENGINES)}")
        if self.engine in BATCHED_ENGINES and any(variant.is_reference for variant in self.variant_objects):
            reference = [variant.name for variant in self.variant_objects if variant.is_reference]
            raise StudyError(f"the batched engine runs AblatableTD3 variants only, not {', '.join(reference)}")
        _check_positive_int("group_size", self.group_size, optional=True)
        if self.group_size is not None and self.engine not in BATCHED_ENGINES:
            raise StudyError(f"group_size is for the batched engine; got engine {self.engine!r} (add --engine batched)")
        if self.address and self.backend != "ray":
            raise StudyError("--address is for the ray backend; add --backend ray")
        if not isinstance(self.hyperparams, dict):
            raise StudyError(f"hyperparams must be a mapping of zoo keys to values, got {self.hyperparams!r}")
        if not isinstance(self.env_hyperparams, dict) or not all(isinstance(v, dict) for v in self.env_hyperparams.values()):
            raise StudyError("env_hyperparams must map env ids to mappings of zoo keys to values")
        unknown = sorted(set(self.env_hyperparams) - set(self.envs))
        if unknown:
            raise StudyError(f"env_hyperparams names envs that are not in the study: {', '.join(unknown)}")
        if self.backend == "local":  # (a Ray cluster's machines may have devices that this one has not)
            check_device(self.device)
        try:
            plan = AnalysisPlan.from_dict(self.analysis)
            check_plan_envs(plan, self.envs)
            self._check_earlier_budgets(plan)
            self.analysis = plan.to_dict()
        except (PlanError, TypeError) as error:
            raise StudyError(str(error)) from None
        self._check_tuning(plan.looks)
        if self.amend_plan is not None and not (isinstance(self.amend_plan, str) and self.amend_plan.strip()):
            raise StudyError(f"amend_plan must say why the plan is amended (a non-empty text), got {self.amend_plan!r}")

    def _check_earlier_budgets(self, plan: AnalysisPlan) -> None:
        """Each hypothesis at an earlier budget names a variant of the study and a budget it reaches at an evaluation."""
        for hypothesis in plan.earlier_budgets:
            where = f"analysis: earlier_budgets: {hypothesis.variant} at {hypothesis.budget:,} steps"
            if hypothesis.variant not in self.variants or hypothesis.variant == baseline_name(self.variants):
                raise PlanError(f"{where}: the variant is not one the study compares with its baseline")
            if self.n_timesteps is None or hypothesis.budget >= self.n_timesteps:
                raise PlanError(f"{where}: the budget must be below the study's n_timesteps ({self.n_timesteps})")
            if self.eval_freq is None or hypothesis.budget % self.eval_freq:
                raise PlanError(
                    f"{where}: the budget must be a multiple of eval_freq ({self.eval_freq}), so that an "
                    "evaluation closes its window"
                )

    def _check_tuning(self, looks: tuple[int, ...]) -> None:
        """Validate ``tuning`` (normalised as its plan's dict) and ``variant_hyperparams``."""
        if self.tuning:
            try:
                tuning = TuningPlan.from_dict(self.tuning)
                tuning.check_seeds(self.seeds)
            except TuningError as error:
                raise StudyError(str(error)) from None
            self.tuning = tuning.to_dict()
            objects = self.variant_objects
            reference = [variant.name for variant in objects if variant.is_reference]
            if reference:
                raise StudyError(f"tuning tunes AblatableTD3 variants only; remove {', '.join(reference)} from variants")
            if "td3" not in self.variants:
                raise StudyError("tuning compares each variant with td3 tuned for itself: add td3 to variants")
            if looks:
                raise StudyError("tuning and analysis.looks do not go together: run the sequential study without tuning")
        if not isinstance(self.variant_hyperparams, dict) or not all(
            isinstance(by_env, dict) and all(isinstance(hp, dict) for hp in by_env.values())
            for by_env in self.variant_hyperparams.values()
        ):
            raise StudyError("variant_hyperparams must map variants to env ids to mappings of zoo keys to values")
        unknown = sorted(set(self.variant_hyperparams) - set(self.variants))
        if unknown:
            raise StudyError(f"variant_hyperparams names variants that are not in the study: {', '.join(unknown)}")
        for variant, by_env in self.variant_hyperparams.items():
            unknown = sorted(set(by_env) - set(self.envs))
            if unknown:
                raise StudyError(f"variant_hyperparams.{variant} names envs that are not in the study: {', '.join(unknown)}")

    @property
    def variant_objects(self) -> list[Variant]:
        return resolve_variants(self.variants)

    def overrides_for(self, env_id: str) -> dict[str, Any]:
        """Hyperparameter overrides for one env (study-wide, then per env, then ``n_timesteps``)."""
        overrides = {**self.hyperparams, **self.env_hyperparams.get(env_id, {})}
        if self.n_timesteps is not None:
            overrides["n_timesteps"] = self.n_timesteps
        return overrides

    def variant_overrides(self, variant: str, env_id: str) -> dict[str, Any]:
        """One variant's own hyperparameter overrides on one env (``variant_hyperparams``), applied after the env's."""
        return dict(self.variant_hyperparams.get(variant, {}).get(env_id, {}))

    def run_settings(self) -> dict[str, Any]:
        """The settings a study folder is tied to, JSON-normalised so they compare equal after a round trip."""
        names = list(RUN_SETTINGS)
        # only where set, so that a folder made before these settings existed is resumed as it was made
        names += [name for name in ("tuning", "variant_hyperparams") if getattr(self, name)]
        names += ["engine"] if self.engine in DECLARED_ENGINES else []
        settings: dict[str, Any] = to_jsonable({name: getattr(self, name) for name in names})
        return settings


def command_defaults() -> dict[str, Any]:
    """What ``sb3-ablation study`` (and :func:`sb3_ablation.study.conduct` with a study file) takes where neither the
    file nor a flag gives it: the leave-one-out variants, 5 seeds, ``runs/study``."""
    return {"variants": ["leave-one-out"], "seeds": 5, "out": "runs/study", "envs": []}


def _check_positive_int(name: str, value: Any, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise StudyError(f"{name} must be a positive integer, got {value!r}")


def check_device(device: str) -> None:
    """
    :param device: a study's ``--device``
    :raise StudyError: not a PyTorch device, or a CUDA device this machine does not have (SB3 would run on the CPU
        without a word, and the study would record the device it did not use)
    """
    problem = device_problem(device)
    if problem is not None:
        raise StudyError(problem)


class SeedList(list[int]):
    """Seeds given one by one (``--seed-list``, ``seed_list:``): a single number is a seed, not a count."""


def check_out_folder(out: str | os.PathLike[str]) -> None:
    """:raise StudyError: ``out`` or one of its parents exists and is not a folder (nothing is created here)"""
    path = Path(out)
    for folder in (path, *path.parents):
        if folder.exists() and not folder.is_dir():
            where = "" if folder == path else f" (its parent {str(folder)!r} is a file)"
            raise StudyError(f"output folder {str(out)!r} is not a folder{where}; expected a folder path for --out")


def parse_seeds(seeds: int | str | list[int] | None) -> SeedList:
    """
    ``5`` (or ``[5]``) means seeds 0..4; a list of two or more numbers, or a :class:`SeedList` of any length, is the
    seeds themselves.

    :param seeds: a count or a list of seeds
    :return: the seeds, sorted, as a :class:`SeedList`: parsed again (a config's ``dataclasses.replace`` runs its
        ``__post_init__``), one seed stays that seed rather than becoming a count
    :raise StudyError: a seed given twice, a negative seed, a count of 0
    """
    if seeds is None:
        raise StudyError("no seeds given; expected a count (e.g. 5 for seeds 0..4) or a list of seeds")
    try:
        given: list[int | str] = [seeds] if isinstance(seeds, (int, str)) else [*seeds]
        values = [int(seed) for seed in given]
    except (TypeError, ValueError):
        raise StudyError(f"seeds must be integers, got {seeds!r}") from None
    if any(value < 0 for value in values) or not values:
        raise StudyError(f"seeds must be non-negative integers, got {seeds!r}")
    if len(values) == 1 and not isinstance(seeds, SeedList):
        if values[0] == 0:
            raise StudyError("--seeds 0 runs nothing; give a count >= 1 or a list of two or more seeds")
        return SeedList(range(values[0]))
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:  # a repeated seed would be the same run twice: one of them is surely a typo
        raise StudyError(f"seeds {values}: {', '.join(map(str, repeated))} given more than once; expected distinct seeds")
    return SeedList(sorted(values))


def to_jsonable(value: Any) -> Any:
    """Round-trip a value through JSON (non-JSON objects become their ``repr``) so that settings compare reliably."""
    return json.loads(json.dumps(value, default=repr, sort_keys=True))


def shipped_studies() -> dict[str, Path]:
    """The study files shipped with the package (``sb3_ablation/study_files/<name>.yml``), by name."""
    folder = Path(__file__).resolve().parents[2] / "study_files"
    return {path.stem: path for path in sorted(folder.glob("*.yml"))}


def find_config_file(name: str | os.PathLike[str]) -> Path:
    """
    :param name: a study file's path, or the name of a shipped study (``pendulum``)
    :return: the file
    :raise StudyError: neither a file nor a shipped study's name
    """
    path = Path(name)
    if path.is_file():
        return path
    shipped = shipped_studies()
    if str(name) in shipped:
        return shipped[str(name)]
    raise StudyError(f"study file {str(name)!r} not found; expected a YAML file or a shipped study: {', '.join(shipped)}")


def load_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """
    Read a study YAML file into keyword arguments of :class:`StudyConfig` (dashes in keys read as underscores).

    A tuned zoo file (the ``best_<env>.yml`` that ``train -optimize`` or ``export`` writes: env ids mapping to zoo
    hyperparameters) reads as a study of those envs with those hyperparameters (``env_hyperparams``), less the
    component switches, which the variants set.

    :param path: the YAML file, or the name of a shipped study (see :func:`shipped_studies`)
    :return: the keyword arguments
    """
    path = find_config_file(path)
    try:
        with open(path) as file:
            data = yaml.safe_load(file) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        problem = " ".join(str(error).split())
        raise StudyError(f"study file {str(path)!r} is not readable YAML: {problem}") from None
    if not isinstance(data, dict):
        raise StudyError(f"study file {str(path)!r} must hold a mapping of settings, got {type(data).__name__}")
    known = {f.name for f in fields(StudyConfig)} - {"study_file"} | {"env", "seed_list"}
    if data and all(isinstance(value, dict) for value in data.values()) and not set(map(str, data)) & known:
        # a zoo file: {env_id: hyperparameters}; "default" applies to every env, as in the zoo; the switches are
        # left out (the variants set them)
        entries = {str(env): {k: v for k, v in entry.items() if k not in SWITCHES} for env, entry in data.items()}
        default = entries.pop("default", {})
        if not entries:
            raise StudyError(f"{str(path)!r} holds only a 'default' entry; a study needs env ids")
        return {"envs": list(entries), "env_hyperparams": {env: {**default, **entry} for env, entry in entries.items()}}
    unknown = [key for key in data if str(key).replace("-", "_") not in known]
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        names = ", ".join(did_you_mean(str(key), known) for key in unknown)
        raise StudyError(f"unknown setting{plural} {names} in {str(path)!r}; expected some of {', '.join(sorted(known))}")
    kwargs: dict[str, Any] = {"study_file": str(path)}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name == "seed_list":
            kwargs["seeds"] = SeedList(value if isinstance(value, list) else [value])
        else:
            kwargs["envs" if name == "env" else name] = value
    return kwargs


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """
    :param name: a name that is not one of ``known`` (dashes read as underscores, as in a study file)
    :param known: the valid names
    :return: ``'name'``, followed by `` (did you mean 'closest'?)`` when a valid name is close (case ignored)
    """
    return quoted_with_suggestion(name.replace("-", "_"), known, ignore_case=True, shown=name)


def check_envs(envs: list[str]) -> None:
    """Fail early, with one line, on an env id Gymnasium does not know (``module:EnvId`` imports the module first)."""
    for env_id in envs:
        module, _, name = env_id.rpartition(":")
        try:
            if module:
                importlib.import_module(module)
            gym.spec(name)
        except (gym.error.Error, ImportError) as error:
            raise StudyError(f"unknown environment {env_id!r}: {str(error).splitlines()[0]}") from None


def resolve_hyperparams(config: StudyConfig, variants: list[Variant]) -> ResolvedHyperparams:
    """``{env_id: {algo: zoo hyperparameters with the study's overrides}}`` for every env and algorithm of the study."""
    from sb3_ablation.zoo.hyperparams import load_hyperparams  # rl_zoo3: heavy, not for `study --help`

    for env_id in config.envs:
        switch_keys = sorted(set(config.overrides_for(env_id)) & set(SWITCHES))
        switch_keys += sorted(
            f"{key} (variant_hyperparams.{variant})"
            for variant in config.variant_hyperparams
            for key in set(config.variant_overrides(variant, env_id)) & set(SWITCHES)
        )
        if switch_keys:
            raise StudyError(f"switches are chosen by the variants, not by hyperparameters: remove {', '.join(switch_keys)}")
    resolved: ResolvedHyperparams = {}
    for env_id in config.envs:
        for algo in dict.fromkeys(variant.algo for variant in variants):
            try:
                resolved.setdefault(env_id, {})[algo] = load_hyperparams(
                    algo, env_id.rpartition(":")[2], overrides=config.overrides_for(env_id)
                )
            except (KeyError, ValueError, TypeError) as error:
                raise StudyError(f"hyperparameters of {algo} on {env_id}: {error}") from None
            check_budget(config, env_id, algo, resolved[env_id][algo])
        for variant in variants:
            # a variant's own overrides are checked as the env's are (keys, types, budget); make_tasks applies them
            own = config.variant_overrides(variant.name, env_id)
            if own:
                try:
                    checked = load_hyperparams(
                        variant.algo, env_id.rpartition(":")[2], overrides={**config.overrides_for(env_id), **own}
                    )
                except (KeyError, ValueError, TypeError) as error:
                    raise StudyError(f"variant_hyperparams of {variant.name} on {env_id}: {error}") from None
                check_budget(config, env_id, variant.algo, checked)
    return resolved


def hyperparams_of(config: StudyConfig, resolved: ResolvedHyperparams, variant: Variant, env_id: str) -> dict[str, Any]:
    """
    The zoo hyperparameters of one variant's runs on one env: its algorithm's resolved ones, then its own overrides
    (``variant_hyperparams``), then its switches (ordinary zoo hyperparameters of ablatable_td3).
    """
    return {**resolved[env_id][variant.algo], **config.variant_overrides(variant.name, env_id), **variant.switches}


#: SB3's OffPolicyAlgorithm default, where a zoo entry sets no learning_starts
SB3_LEARNING_STARTS = 100


def check_budget(config: StudyConfig, env_id: str, algo: str, hyperparams: dict[str, Any]) -> None:
    """Refuse runs that would train nothing (budget at or below learning_starts) or never be evaluated."""
    budget = int(float(hyperparams.get("n_timesteps", 0)))
    learning_starts = int(float(hyperparams.get("learning_starts", SB3_LEARNING_STARTS)))
    if budget <= learning_starts:
        raise StudyError(
            f"{env_id} ({algo}): n_timesteps {budget:,} is at or below learning_starts {learning_starts:,}, so no run "
            f"would train: lower learning_starts (--hyperparams learning_starts:{max(1, budget // 10)}) or add --quick "
            "(learning_starts a tenth of -n)"
        )
    if config.eval_freq is not None and config.eval_freq > budget:
        raise StudyError(
            f"{env_id}: --eval-freq {config.eval_freq:,} is beyond the budget of {budget:,} steps, so no run would be "
            "evaluated during training; use an eval_freq of at most n_timesteps"
        )


def make_tasks(config: StudyConfig, variants: list[Variant], resolved: ResolvedHyperparams) -> list[RunTask]:
    """One task per (env, variant, seed), seeds outermost so the first results cover every variant."""
    return [
        RunTask(
            env=env_id,
            variant=variant.name,
            seed=seed,
            algo=variant.algo,
            switches=dict(variant.switches),
            hyperparams=hyperparams_of(config, resolved, variant, env_id),
            eval_freq=config.eval_freq,
            eval_episodes=config.eval_episodes,
            eval_max_episode_steps=config.eval_max_episode_steps,
            device=config.device,
            checkpoint_freq=config.checkpoint_freq,
            group_size=config.group_size,
            compile_update=config.engine == "batched-compiled",
            keep_model=config.keep_models,
            tensorboard_log=(
                str(Path(config.tensorboard_log) / variant.name / f"seed_{seed}") if config.tensorboard_log else None
            ),
        )
        for seed in config.seeds
        for env_id in config.envs
        for variant in variants
    ]
