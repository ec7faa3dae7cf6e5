"""sb3-ablation: TD3 with every component as a switch, for Stable-Baselines3 and RL Zoo."""

from sb3_ablation.ddpg import DDPG
from sb3_ablation.td3 import SWITCHES, AblatableTD3

__all__ = ["DDPG", "SWITCHES", "AblatableTD3"]
__version__ = "0.1.0"
