"""K independent AblatableTD3 agents trained in one process with batched networks (the study's batched engine)."""

from sb3_ablation.batched.batched_td3 import BatchedTD3
from sb3_ablation.batched.buffers import AgentReplayBuffer
from sb3_ablation.batched.device_buffer import DeviceAgentReplayBuffer
from sb3_ablation.batched.policies import BatchedTD3Policy, EnsembleCritic, EnsembleLinear, MlpPolicy

__all__ = [
    "AgentReplayBuffer",
    "BatchedTD3",
    "BatchedTD3Policy",
    "DeviceAgentReplayBuffer",
    "EnsembleCritic",
    "EnsembleLinear",
    "MlpPolicy",
]
