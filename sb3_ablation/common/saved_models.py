"""What a saved SB3 model file holds, read from its ``data`` entry, and the refusal of a model of another algorithm.

SB3's files do not record the algorithm that saved them; its policy class and saved attributes tell it: SB3's TD3 and
DDPG share ``TD3Policy`` and differ in ``policy_delay``, the target noise clip and the number of critics; PPO and A2C
share ``ActorCriticPolicy`` and differ in ``clip_range``; this package's files carry ``switches`` (AblatableTD3) or
name its own policy classes.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.dqn.policies import DQNPolicy
from stable_baselines3.sac.policies import SACPolicy
from stable_baselines3.td3.policies import TD3Policy

#: algorithm -> (how to load its files, the rl_zoo3 names of the algorithms that load them)
LOADERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "AblatableTD3": ("AblatableTD3.load", ("ablatable_td3",)),
    "BatchedTD3": ("sb3_ablation.batched.BatchedTD3.load", ()),
    "DDPG": ("DDPG.load (sb3_ablation's or stable_baselines3's)", ("ddpg_scratch", "ddpg")),
    "TD3": ("AblatableTD3.load or stable_baselines3.TD3.load", ("ablatable_td3", "td3")),
    "SAC": ("stable_baselines3.SAC.load", ("sac",)),
    "PPO": ("stable_baselines3.PPO.load", ("ppo",)),
    "A2C": ("stable_baselines3.A2C.load", ("a2c",)),
    "DQN": ("stable_baselines3.DQN.load", ("dqn",)),
    "TQC": ("sb3_contrib.TQC.load", ("tqc",)),
    "QR-DQN": ("sb3_contrib.QRDQN.load", ("qrdqn",)),
    "CrossQ": ("sb3_contrib.CrossQ.load", ("crossq",)),
    "ARS": ("sb3_contrib.ARS.load", ("ars",)),
    "RecurrentPPO": ("sb3_contrib.RecurrentPPO.load", ("ppo_lstm",)),
}
#: the start of a policy class's module -> the algorithm whose files name it
POLICY_MODULES = {
    "sb3_ablation.batched": "BatchedTD3",
    "sb3_ablation.td3": "AblatableTD3",
    "sb3_ablation.ddpg": "DDPG",
    "stable_baselines3.sac": "SAC",
    "stable_baselines3.dqn": "DQN",
    "sb3_contrib.tqc": "TQC",
    "sb3_contrib.qrdqn": "QR-DQN",
    "sb3_contrib.crossq": "CrossQ",
    "sb3_contrib.ars": "ARS",
    "sb3_contrib.common.recurrent": "RecurrentPPO",
}


class IncompatibleModelError(ValueError):
    """A saved model of another algorithm than the class loading it (``saved`` says what the file holds)."""

    def __init__(self, message: str, saved: SavedModel):
        super().__init__(message)
        self.saved = saved


@dataclasses.dataclass(frozen=True)
class SavedModel:
    """What a model file holds."""

    #: the algorithm that saved it (a key of :data:`LOADERS`), None when the file does not tell
    algorithm: str | None
    #: its policy class, ``module.Class``
    policy: str
    #: what else identifies it (e.g. ``policy_delay=2, 2 critics``), may be empty
    details: str = ""

    @property
    def loader(self) -> str:
        """How to load it, e.g. ``stable_baselines3.PPO.load``."""
        return LOADERS[self.algorithm][0] if self.algorithm in LOADERS else "the algorithm class that saved it"

    @property
    def zoo_algos(self) -> tuple[str, ...]:
        """The rl_zoo3 algorithm names that load it (``--algo``)."""
        return LOADERS[self.algorithm][1] if self.algorithm in LOADERS else ()

    def describe(self) -> str:
        """e.g. ``a PPO model (policy stable_baselines3.common.policies.ActorCriticPolicy)``."""
        name = self.algorithm or "saved"
        article = "an" if name[0] in "AEIOU" else "a"
        details = f", {self.details}" if self.details else ""
        return f"{article} {name} model (policy {self.policy}{details})"


def _policy_name(policy_class: Any) -> tuple[str, str]:
    """``(module, class name)`` of a saved policy class, also when SB3 could not deserialize it (then a dict)."""
    if isinstance(policy_class, type):
        return policy_class.__module__, policy_class.__qualname__
    if isinstance(policy_class, dict):
        match = re.match(r"<function ([\w.]+)\.__init__ at", str(policy_class.get("__init__", "")))
        return str(policy_class.get("__module__", "?")), match.group(1) if match else "?"
    return "?", type(policy_class).__name__


def _subclass(policy_class: Any, base: type) -> bool:
    return isinstance(policy_class, type) and issubclass(policy_class, base)


def describe_saved_model(data: dict[str, Any]) -> SavedModel:
    """
    :param data: the saved attributes of an SB3 model file (see :func:`sb3_ablation.common.off_policy.read_saved_data`)
    :return: what it holds
    """
    policy_class = data.get("policy_class")
    module, name = _policy_name(policy_class)
    policy = f"{module}.{name}"
    algorithm = next((algo for prefix, algo in POLICY_MODULES.items() if module.startswith(prefix)), None)
    if algorithm in (None, "AblatableTD3") and isinstance(data.get("switches"), dict):
        off = [switch for switch, on in data["switches"].items() if not on]
        return SavedModel("AblatableTD3", policy, f"switched off: {', '.join(off) or 'none'}")
    if algorithm is not None:
        return SavedModel(algorithm, policy)
    sb3_td3 = module == "stable_baselines3.td3.policies" or _subclass(policy_class, TD3Policy)
    if sb3_td3:
        n_critics = (data.get("policy_kwargs") or {}).get("n_critics", 2)
        if "policy_delay" not in data:  # this package's DDPG, in SB3's format
            return SavedModel("DDPG", policy, f"{n_critics} critic{'s' * (n_critics != 1)}")
        details = f"policy_delay={data['policy_delay']}, {n_critics} critic{'s' * (n_critics != 1)}"
        # SB3's DDPG is its TD3 with one critic, no delay and the target noise clipped to zero
        ddpg = data["policy_delay"] == 1 and n_critics == 1 and data.get("target_noise_clip") == 0
        return SavedModel("DDPG" if ddpg else "TD3", policy, details)
    actor_critic = (module == "stable_baselines3.common.policies" and "ActorCritic" in name) or _subclass(
        policy_class, ActorCriticPolicy
    )
    if actor_critic:
        return SavedModel("PPO" if "clip_range" in data else "A2C", policy)
    for base, algo in ((SACPolicy, "SAC"), (DQNPolicy, "DQN")):
        if _subclass(policy_class, base):
            return SavedModel(algo, policy)
    return SavedModel(None, policy)


def check_saved_algorithm(data: dict[str, Any], path: Any, loading_class: str, loads: tuple[str, ...]) -> None:
    """
    :param data: the file's saved attributes
    :param path: the file, for the message
    :param loading_class: the class's name, e.g. ``AblatableTD3``
    :param loads: the algorithms (keys of :data:`LOADERS`) whose files the class loads
    :raise IncompatibleModelError: the file holds a model of another algorithm (an unknown one is not refused)
    """
    saved = describe_saved_model(data)
    if saved.algorithm is not None and saved.algorithm not in loads:
        name = path if isinstance(path, (str, os.PathLike)) else getattr(path, "name", "the file")  # (a file object)
        raise IncompatibleModelError(
            f"{name} holds {saved.describe()}, which {loading_class} does not load: load it with {saved.loader}", saved
        )
