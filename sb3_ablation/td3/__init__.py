from sb3_ablation.td3.ablatable_td3 import SWITCHES, AblatableTD3
from sb3_ablation.td3.policies import AblatableTD3Policy, CnnPolicy, GaussianActor, MlpPolicy, MultiInputPolicy

__all__ = ["SWITCHES", "AblatableTD3", "AblatableTD3Policy", "CnnPolicy", "GaussianActor", "MlpPolicy", "MultiInputPolicy"]
