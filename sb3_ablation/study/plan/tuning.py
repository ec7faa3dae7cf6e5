"""The ``tuning:`` section of a study: every variant tuned for itself before its confirmatory runs.

A leave-one-out study answers "what happens when component k is removed and nothing else changes". With a ``tuning:``
section it also answers "is k still needed when the rest is re-tuned for its absence?": before the confirmatory runs,
every (env, variant) gets an Optuna study with the same budget (``n_trials``) over the same declared search space, each
trial training the tuning ``seeds`` (``train -optimize --trial-seeds``), which the confirmatory seeds never share. The
confirmatory seeds are then run twice: with the study's hyperparameters, and with each variant's own best ones.

Example (in a study file)::

    tuning:
      n_trials: 30
      seeds: [1000, 1001, 1002]
      aggregate: mean
      sampler: tpe
      pruner: median
      search_space:
        learning_rate: {low: 1.0e-4, high: 3.0e-3, log: true}
        tau: {low: 0.001, high: 0.05, log: true}
        batch_size: {choices: [64, 128, 256]}
        noise_std: {low: 0.05, high: 0.5}

A range is ``{low, high}`` with optional ``log`` (sampled on a log scale) or ``step``; integers when both bounds are
integers and the hyperparameter is an integer one, floats otherwise. ``choices`` is a categorical parameter. Every
hyperparameter not in the space keeps the study's value. ``noise_std`` is the standard deviation of rl-zoo's normal
action noise (``noise_type: normal``, ``noise_std``: ``NormalActionNoise(0, noise_std)`` on every action dimension),
so a study tuning it must have normal action noise.

Each variant is tuned over the declared hyperparameters it uses: one that a switched-off component makes unused
(``tau`` without target networks, ``batch_size`` without a replay buffer, ...; :data:`sb3_ablation.switches.TABLE`) is
left out of that variant's space, so no trial is spent on a dimension without effect.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sb3_ablation.common.suggestions import quoted_with_suggestion
from sb3_ablation.switches import BY_NAME, SWITCHES

#: the trial's value over its seeds (:data:`sb3_ablation.zoo.trials.AGGREGATES`)
AGGREGATES = ("mean", "iqm")
#: rl_zoo3's samplers and pruners that need nothing else installed
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "halving", "none")
#: the hyperparameters a search space may declare: constructor arguments every AblatableTD3 variant accepts (the
#: component switches are the variants'), with whether their values are integers
SEARCHABLE: Mapping[str, bool] = {
    "learning_rate": False,
    "tau": False,
    "gamma": False,
    "batch_size": True,
    "buffer_size": True,
    "learning_starts": True,
    "train_freq": True,
    "gradient_steps": True,
    "noise_std": False,
    "policy_delay": True,
    "target_policy_noise": False,
    "target_noise_clip": False,
}
#: ``noise_std`` sets the std of this action noise type, rl-zoo's ``noise_type``
NOISE_TYPE = "normal"
#: the keys of ``tuning:``
KEYS = (
    "n_trials",
    "seeds",
    "aggregate",
    "sampler",
    "pruner",
    "search_space",
    "n_evaluations",
    "eval_episodes",
    "n_startup_trials",
)
#: the keys of one hyperparameter's entry in ``search_space``
RANGE_KEYS = ("low", "high", "log", "step", "choices")
#: the confirmatory runs with each variant's own hyperparameters: a study folder nested in the study's, ``<out>/tuned``
TUNED_FOLDER = "tuned"
#: evaluations per trial when none are declared: each seed is evaluated every ``n_timesteps / 10`` steps (what the
#: pruner sees); the trial's value is its last evaluation
DEFAULT_EVALUATIONS = 10


class TuningError(ValueError):
    """A ``tuning:`` section that cannot be used, reported as one line naming the key."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _positive_int(key: str, value: Any) -> int:
    if not _is_int(value) or value < 1:
        raise TuningError(f"tuning.{key} must be a positive integer, got {value!r}")
    return int(value)


def check_range(name: str, spec: Any) -> dict[str, Any]:
    """
    :param name: a hyperparameter of :data:`SEARCHABLE`
    :param spec: its entry in ``search_space``
    :return: the entry, checked (``log: false`` and a missing ``step`` left out)
    :raise TuningError: one line naming ``tuning.search_space.<name>``
    """
    where = f"tuning.search_space.{name}"
    if not isinstance(spec, Mapping):
        raise TuningError(f"{where} must be {{low: ..., high: ...}} or {{choices: [...]}}, got {spec!r}")
    unknown = [str(key) for key in spec if key not in RANGE_KEYS]
    if unknown:
        names = ", ".join(quoted_with_suggestion(key, RANGE_KEYS) for key in unknown)
        raise TuningError(f"{where}: unknown key {names}; expected low and high (with log or step), or choices")
    integer = SEARCHABLE[name]
    kind = "integers" if integer else "numbers"
    if "choices" in spec:
        if set(spec) != {"choices"}:
            raise TuningError(f"{where}: choices cannot go with {', '.join(sorted(set(spec) - {'choices'}))}")
        choices = spec["choices"]
        if not isinstance(choices, list) or not choices:
            raise TuningError(f"{where}.choices must be a non-empty list, got {choices!r}")
        valid = _is_int if integer else _is_number
        if not all(valid(choice) for choice in choices):
            raise TuningError(f"{where}.choices must be {kind}, got {choices!r}")
        if len(set(choices)) != len(choices):
            raise TuningError(f"{where}.choices has duplicates: {choices!r}")
        return {"choices": list(choices)}
    if "low" not in spec or "high" not in spec:
        raise TuningError(f"{where} needs low and high (or choices), got {dict(spec)!r}")
    low, high = spec["low"], spec["high"]
    if not (_is_number(low) and _is_number(high)):
        raise TuningError(f"{where}: low and high must be {kind}, got {low!r} and {high!r}")
    if integer and not (_is_int(low) and _is_int(high)):
        raise TuningError(f"{where}: {name} is an integer, so low and high must be integers, got {low!r} and {high!r}")
    if not low < high:
        raise TuningError(f"{where}: low ({low!r}) must be below high ({high!r})")
    if low < 0:
        raise TuningError(f"{where}: low must not be negative, got {low!r}")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise TuningError(f"{where}.log must be true or false, got {log!r}")
    if log and low <= 0:
        raise TuningError(f"{where}: a log range needs low > 0, got {low!r}")
    checked: dict[str, Any] = {"low": low, "high": high}
    if log:
        checked["log"] = True
    step = spec.get("step")
    if step is not None:
        if log:
            raise TuningError(f"{where}: step and log cannot go together (Optuna samples a log range continuously)")
        if not _is_number(step) or step <= 0 or (integer and not _is_int(step)):
            raise TuningError(f"{where}.step must be a positive {'integer' if integer else 'number'}, got {step!r}")
        checked["step"] = step
    return checked


@dataclass(frozen=True)
class TuningPlan:
    """
    The ``tuning:`` section (see the module docstring).

    :param n_trials: Optuna trials per (env, variant), the same budget for every variant
    :param seeds: the tuning seeds, consecutive (each trial trains ``seeds[0]`` .. ``seeds[-1]``, as
        ``train -optimize --seed seeds[0] --trial-seeds len(seeds)``); disjoint from the study's seeds
    :param search_space: hyperparameter -> ``{low, high[, log | step]}`` or ``{choices}``
    :param aggregate: a trial's value over its seeds, and what the pruner sees (:data:`AGGREGATES`)
    :param sampler: rl_zoo3's sampler (:data:`SAMPLERS`)
    :param pruner: rl_zoo3's pruner (:data:`PRUNERS`)
    :param n_evaluations: evaluations of each seed per trial (rl_zoo3's ``--n-evaluations``); the trial's value is
        the aggregate of the seeds' last ones
    :param eval_episodes: episodes per evaluation (``None``: the study's ``eval_episodes``)
    :param n_startup_trials: trials sampled at random before TPE, and before the median pruner prunes (``None``:
        rl_zoo3's default, 10)
    """

    n_trials: int
    seeds: tuple[int, ...]
    search_space: dict[str, dict[str, Any]] = field(default_factory=dict)
    aggregate: str = "mean"
    sampler: str = "tpe"
    pruner: str = "median"
    n_evaluations: int = DEFAULT_EVALUATIONS
    eval_episodes: int | None = None
    n_startup_trials: int | None = None

    @classmethod
    def from_dict(cls, data: Any) -> TuningPlan:
        """
        :param data: the ``tuning:`` mapping of a study file (or :meth:`to_dict`'s output)
        :raise TuningError: one line naming the key
        """
        if not isinstance(data, Mapping):
            raise TuningError(f"tuning must be a mapping of {', '.join(KEYS)}, got {data!r}")
        unknown = [str(key) for key in data if str(key).replace("-", "_") not in KEYS]
        if unknown:
            names = ", ".join(quoted_with_suggestion(key.replace("-", "_"), KEYS) for key in unknown)
            raise TuningError(f"unknown key {names} in tuning; expected some of {', '.join(KEYS)}")
        data = {str(key).replace("-", "_"): value for key, value in data.items()}
        for key in ("n_trials", "seeds", "search_space"):
            if key not in data:
                raise TuningError(f"tuning needs {key}")
        n_trials = _positive_int("n_trials", data["n_trials"])
        seeds = data["seeds"]
        if not isinstance(seeds, (list, tuple)) or not seeds or not all(_is_int(seed) and seed >= 0 for seed in seeds):
            raise TuningError(f"tuning.seeds must be a list of non-negative integers, e.g. [1000, 1001, 1002], got {seeds!r}")
        if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
            raise TuningError(
                f"tuning.seeds must be consecutive, as each trial trains --seed .. --seed + K - 1 (train -optimize "
                f"--trial-seeds K), got {list(seeds)!r}"
            )
        space = data["search_space"]
        if not isinstance(space, Mapping) or not space:
            raise TuningError(f"tuning.search_space must name at least one hyperparameter, got {space!r}")
        for name in space:
            if str(name) in SWITCHES:
                raise TuningError(
                    f"tuning.search_space.{name}: the component switches are the variants', not hyperparameters to tune"
                )
            if str(name) not in SEARCHABLE:
                raise TuningError(
                    f"tuning.search_space: unknown hyperparameter {quoted_with_suggestion(str(name), list(SEARCHABLE))}; "
                    f"expected some of {', '.join(SEARCHABLE)}"
                )
        checked = {str(name): check_range(str(name), spec) for name, spec in space.items()}
        choices = {"aggregate": AGGREGATES, "sampler": SAMPLERS, "pruner": PRUNERS}
        named: dict[str, str] = {}
        for key, valid in choices.items():
            value = data.get(key, getattr(cls, key))
            if value not in valid:
                raise TuningError(f"tuning.{key} {quoted_with_suggestion(str(value), valid)} is not one of {', '.join(valid)}")
            named[key] = str(value)
        eval_episodes = data.get("eval_episodes")
        startup = data.get("n_startup_trials")
        if startup is not None and (not _is_int(startup) or startup < 0):
            raise TuningError(f"tuning.n_startup_trials must be a non-negative integer, got {startup!r}")
        return cls(
            n_trials=n_trials,
            seeds=tuple(int(seed) for seed in seeds),
            search_space=checked,
            n_evaluations=_positive_int("n_evaluations", data.get("n_evaluations", DEFAULT_EVALUATIONS)),
            eval_episodes=None if eval_episodes is None else _positive_int("eval_episodes", eval_episodes),
            n_startup_trials=None if startup is None else int(startup),
            **named,
        )

    def to_dict(self) -> dict[str, Any]:
        """The plan as the study file would give it (and ``study.json`` stores it)."""
        data: dict[str, Any] = {
            "n_trials": self.n_trials,
            "seeds": list(self.seeds),
            "aggregate": self.aggregate,
            "sampler": self.sampler,
            "pruner": self.pruner,
            "search_space": {name: dict(spec) for name, spec in self.search_space.items()},
            "n_evaluations": self.n_evaluations,
        }
        if self.eval_episodes is not None:
            data["eval_episodes"] = self.eval_episodes
        if self.n_startup_trials is not None:
            data["n_startup_trials"] = self.n_startup_trials
        return data

    def space_for(self, switches: Mapping[str, bool]) -> dict[str, dict[str, Any]]:
        """
        The search space of one variant: the declared one less the hyperparameters its switched-off components make
        unused (``noise_std`` stays: without the deterministic policy, the noise's std is the Gaussian actor's initial
        std).

        :param switches: the variant's switch values
        """
        unused = {name for switch, on in switches.items() if not on for name in BY_NAME[switch].unused}
        return {name: dict(spec) for name, spec in self.search_space.items() if name not in unused}

    def check_seeds(self, seeds: Sequence[int]) -> None:
        """
        :param seeds: the study's (confirmatory) seeds
        :raise TuningError: a tuning seed is also a study seed (tuning would have seen the runs it is judged on)
        """
        shared = sorted(set(self.seeds) & set(seeds))
        if shared:
            raise TuningError(
                f"tuning.seeds and seeds overlap ({', '.join(map(str, shared))}): the confirmatory runs need seeds "
                "that tuning never saw"
            )


__all__ = [
    "AGGREGATES",
    "NOISE_TYPE",
    "PRUNERS",
    "SAMPLERS",
    "SEARCHABLE",
    "TUNED_FOLDER",
    "TuningError",
    "TuningPlan",
    "check_range",
]
