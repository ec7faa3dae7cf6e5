"""Register ``ablatable_td3`` and ``ddpg_scratch`` with rl_zoo3, the way its maintainers document for new algorithms.

rl_zoo3 reads one algorithm table (``rl_zoo3.utils.ALGOS``, the same dict object that ``rl_zoo3``, ``rl_zoo3.train``,
``rl_zoo3.exp_manager`` and ``rl_zoo3.enjoy`` import) and its sampler/converter tables at call time, so adding our
entries to those dicts is all it takes; SB3's ``td3`` and ``ddpg`` entries are left as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import rl_zoo3.hyperparams_opt
import rl_zoo3.utils

from sb3_ablation import SWITCHES
from sb3_ablation.zoo.hyperparams import ALGOS, OWN_ALGOS, ZooConfigError, closest
from sb3_ablation.zoo.hyperparams_opt import (
    convert_ablation_params,
    sample_ablatable_td3_params,
    sample_ddpg_scratch_params,
)


def register(tune_switches: Sequence[str] = ()) -> None:
    """
    Add our algorithms to rl_zoo3's algorithm, sampler and converter tables (idempotent).

    :param tune_switches: component switches that the ``ablatable_td3`` sampler tunes (the others are held at
        the config's values)
    :raise RuntimeError: if rl_zoo3 already has one of our names for another algorithm (we never shadow a key)
    :raise ZooConfigError: for an unknown switch name
    """
    for switch in tune_switches:
        if switch not in SWITCHES:
            raise ZooConfigError(
                f"--tune-switches: unknown switch {switch!r}{closest(switch, SWITCHES)} (switches: {', '.join(SWITCHES)})"
            )
    for name in OWN_ALGOS:
        registered = rl_zoo3.utils.ALGOS.get(name, ALGOS[name])
        if registered is not ALGOS[name]:
            raise RuntimeError(f"rl_zoo3 already has an algorithm called {name!r} ({registered!r}); not replacing it")
        rl_zoo3.utils.ALGOS[name] = ALGOS[name]
        rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER[name] = convert_ablation_params
    rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER["ddpg_scratch"] = sample_ddpg_scratch_params
    rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER["ablatable_td3"] = functools.partial(
        sample_ablatable_td3_params, tune_switches=tuple(tune_switches)
    )
