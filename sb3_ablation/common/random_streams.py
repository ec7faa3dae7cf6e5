"""The process's random number streams (Python's, NumPy's global, PyTorch's CPU and CUDA ones): what SB3's
``set_random_seed`` seeds, captured and restored as one state (a run's checkpoint, a tuning seed's own streams)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch as th


def process_random_state() -> dict[str, Any]:
    """:return: the state of the process's streams (``cuda``: ``None`` without CUDA)"""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": th.get_rng_state(),
        "cuda": th.cuda.get_rng_state_all() if th.cuda.is_available() else None,
    }


def set_process_random_state(state: dict[str, Any]) -> None:
    """:param state: a :func:`process_random_state` (its CUDA part restored where there is CUDA)"""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    th.set_rng_state(state["torch"])
    if state["cuda"] is not None and th.cuda.is_available():
        th.cuda.set_rng_state_all(state["cuda"])
