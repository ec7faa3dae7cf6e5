"""Whether a ``--device`` can be used here: one check for ``train`` and ``study``."""

from __future__ import annotations

import torch as th


def device_problem(device: str) -> str | None:
    """
    :param device: a ``--device`` value (``auto``, ``cpu``, ``cuda``, ``cuda:1``, ...)
    :return: why it cannot be used here, in one line naming it (not a PyTorch device, or a CUDA device this machine
        does not have: SB3 would run on the CPU without a word); ``None`` when it can
    """
    if device == "auto":
        return None
    try:
        requested = th.device(device)
    except (RuntimeError, ValueError) as error:
        return f"--device {device}: not a PyTorch device ({error})"
    if requested.type == "cuda" and not th.cuda.is_available():
        return (
            f"--device {device}: CUDA is not available here (PyTorch {th.__version__}); "
            "use --device cpu, or auto for the GPU when there is one"
        )
    if requested.type == "cuda" and requested.index is not None and requested.index >= th.cuda.device_count():
        return f"--device {device}: this machine has {th.cuda.device_count()} CUDA device(s)"
    return None
