"""Small building blocks shared by DDPG and AblatableTD3."""

import inspect
import pathlib
from collections.abc import Sequence
from typing import Any

import stable_baselines3 as sb3
import torch as th

from sb3_ablation.common.suggestions import did_you_mean


class UnsupportedActionSpaceError(ValueError, AssertionError):
    """
    An action space the algorithm cannot act in. An ``AssertionError``, the type SB3 raises there (code written
    against SB3 catches it), and a ``ValueError``, what it is.
    """


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 run``, ``2 runs`` (``nouns``: the plural when it is not ``noun + "s"``)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


@th.no_grad()
def foreach_polyak_update(params: list[th.Tensor], target_params: list[th.Tensor], tau: float) -> None:
    """
    Polyak averaging ``target <- (1 - tau) * target + tau * param``, as SB3's ``polyak_update``, with the same two
    arithmetic operations (hence bit-identical results) but two multi-tensor kernels instead of two per parameter.

    :param params: parameters to copy from
    :param target_params: parameters to update in place
    :param tau: the soft update coefficient (1 copies the parameters)
    """
    if len(params) != len(target_params):
        raise ValueError(f"polyak update over {len(params)} parameters but {len(target_params)} target parameters")
    if not params:
        return
    th._foreach_mul_(target_params, 1 - tau)
    th._foreach_add_(target_params, params, alpha=tau)


def keyword_parameters(cls: type) -> list[str]:
    """
    The keyword arguments that ``cls(...)`` accepts: those of its ``__init__``, and where that passes ``**kwargs`` on
    to its base class, the base class's too.
    """
    names: list[str] = []
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None:
            continue
        parameters = inspect.signature(init).parameters.values()
        names += [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return names


def check_keyword_arguments(cls: type, kwargs: dict[str, Any], highlighted: Sequence[str] = ()) -> None:
    """
    Raise a one-line ``TypeError`` naming an unknown keyword argument of ``cls`` and the closest valid one.

    :param cls: the class that receives ``kwargs``
    :param kwargs: the keyword arguments given
    :param highlighted: names listed in the message as a reminder (e.g. the component switches)
    """
    valid = keyword_parameters(cls)
    for name in kwargs:
        if name in valid:
            continue
        hint = did_you_mean(name, valid, separator="; ") or "."
        listed = f" The switches are: {', '.join(highlighted)}." if highlighted else ""
        raise TypeError(f"{cls.__name__} got an unknown keyword argument {name!r}{hint}{listed}")


def user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside this package and SB3, for warnings about its arguments."""
    internal = (str(pathlib.Path(__file__).parents[1]), str(pathlib.Path(sb3.__file__).parent))
    frame, level = inspect.currentframe(), 0
    while frame is not None and frame.f_code.co_filename.startswith(internal):
        frame, level = frame.f_back, level + 1
    return level
