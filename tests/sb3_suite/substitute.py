"""pytest plugin: SB3's own tests with this package's classes in place of SB3's TD3 and DDPG.

Loaded before SB3's test modules are imported (``-p substitute``), so their ``from stable_baselines3 import TD3,
DDPG`` binds ``AblatableTD3`` and ``DDPG``. Collection fails if a module still holds SB3's class: a run that
silently tested SB3 against itself would pass for the wrong reason.
"""

import pytest
import stable_baselines3

from sb3_ablation import DDPG, AblatableTD3

SUBSTITUTES = {"TD3": AblatableTD3, "DDPG": DDPG}
for _name, _substitute in SUBSTITUTES.items():
    setattr(stable_baselines3, _name, _substitute)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        for name, substitute in SUBSTITUTES.items():
            bound = getattr(module, name, substitute)
            if bound is not substitute:
                raise pytest.UsageError(f"{item.nodeid}: {name} is {bound!r}, expected {substitute!r}")


def pytest_report_header() -> str:
    return "sb3_ablation substitution: " + ", ".join(f"{k} -> {v.__module__}.{v.__name__}" for k, v in SUBSTITUTES.items())
