"""Register ``ablatable_td3`` and ``ddpg_scratch`` with rl_zoo3, the way its maintainers document for new algorithms.

rl_zoo3 reads its algorithm, sampler and converter tables at call time, so adding our entries to them is all it
takes (:func:`sb3_ablation.zoo.adapter.register_algorithm`); SB3's ``td3`` and ``ddpg`` entries are left as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sb3_ablation import SWITCHES
from sb3_ablation.common.suggestions import did_you_mean
from sb3_ablation.zoo.adapter import register_algorithm
from sb3_ablation.zoo.hyperparams import ALGOS, OWN_ALGOS, ZooConfigError
from sb3_ablation.zoo.hyperparams_opt import (
    convert_ablation_params,
    sample_ablatable_td3_params,
    sample_ddpg_scratch_params,
    sample_declared_params,
)


def register(tune_switches: Sequence[str] = (), search_space: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """
    Add our algorithms to rl_zoo3's algorithm, sampler and converter tables (idempotent).

    :param tune_switches: component switches that the ``ablatable_td3`` sampler tunes (the others are held at
        the config's values)
    :param search_space: a declared search space (:func:`~sb3_ablation.zoo.hyperparams_opt.sample_declared_params`):
        the ``ablatable_td3`` sampler then samples only it (the converter reads the trials of either); ``None``: the
        full sampler (the next call without one puts it back)
    :raise RuntimeError: if rl_zoo3 already has one of our names for another algorithm (we never shadow a key)
    :raise ZooConfigError: for an unknown switch name
    """
    samplers: dict[str, Callable[..., dict[str, Any]]] = {
        "ddpg_scratch": sample_ddpg_scratch_params,
        "ablatable_td3": functools.partial(sample_ablatable_td3_params, tune_switches=tuple(tune_switches)),
    }
    for switch in tune_switches:
        if switch not in SWITCHES:
            raise ZooConfigError(
                f"--tune-switches: unknown switch {switch!r}{did_you_mean(switch, SWITCHES, separator='; ')} "
                f"(switches: {', '.join(SWITCHES)})"
            )
    if search_space is not None:
        samplers["ablatable_td3"] = functools.partial(sample_declared_params, space=dict(search_space))
    for name in OWN_ALGOS:
        register_algorithm(name, ALGOS[name], samplers[name], convert_ablation_params)
