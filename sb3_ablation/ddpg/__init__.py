from sb3_ablation.ddpg.ddpg import DDPG
from sb3_ablation.ddpg.policies import CnnPolicy, DDPGPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["DDPG", "CnnPolicy", "DDPGPolicy", "MlpPolicy", "MultiInputPolicy"]
