"""Policies of DDPG: the deterministic actor-critic policy (:mod:`sb3_ablation.common.policies`, re-exported here)
under SB3's aliases, with SB3's feature extractors."""

from typing import Any

from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor, NatureCNN
from stable_baselines3.common.type_aliases import Schedule

from sb3_ablation.common.policies import Actor, Critic, DDPGPolicy

__all__ = ["Actor", "CnnPolicy", "Critic", "DDPGPolicy", "MlpPolicy", "MultiInputPolicy"]


MlpPolicy = DDPGPolicy


class CnnPolicy(DDPGPolicy):
    """
    DDPG policy for image observations (NatureCNN features extractor). Parameters as :class:`DDPGPolicy`.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN,
        **kwargs: Any,
    ):
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_class=features_extractor_class, **kwargs
        )


class MultiInputPolicy(DDPGPolicy):
    """
    DDPG policy for Dict observations (CombinedExtractor). Parameters as :class:`DDPGPolicy`.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Schedule,
        features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor,
        **kwargs: Any,
    ):
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_class=features_extractor_class, **kwargs
        )
