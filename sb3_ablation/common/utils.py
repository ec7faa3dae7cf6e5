"""Small building blocks shared by DDPG and AblatableTD3."""

import difflib
import inspect
from collections.abc import Sequence
from typing import Any

import torch as th


@th.no_grad()
def foreach_polyak_update(params: Sequence[th.Tensor], target_params: Sequence[th.Tensor], tau: float) -> None:
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


def check_keyword_arguments(cls: type, kwargs: dict[str, Any], highlighted: Sequence[str] = ()) -> None:
    """
    Raise a one-line ``TypeError`` naming an unknown keyword argument of ``cls`` and the closest valid one.

    :param cls: the class whose ``__init__`` receives ``kwargs``
    :param kwargs: the keyword arguments given
    :param highlighted: names listed in the message as a reminder (e.g. the component switches)
    """
    valid = [name for name in inspect.signature(cls.__init__).parameters if name not in ("self", "args", "kwargs")]
    for name in kwargs:
        if name in valid:
            continue
        close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        listed = f" The switches are: {', '.join(highlighted)}." if highlighted else ""
        raise TypeError(f"{cls.__name__} got an unknown keyword argument {name!r}{hint}{listed}")


class FlatParameters:
    """
    The parameters of a network as views into one contiguous buffer, their gradients into another.

    An elementwise optimizer (Adam) over the single flat parameter then does the same arithmetic, element by element,
    as over the separate tensors (so results are bit-identical), in a handful of kernels instead of a handful per
    tensor; a Polyak update of flat target networks likewise. Gradients stay in the buffer: ``zero_grad`` zeroes it
    in place (a gradient of exactly zero leaves Adam's update unchanged).

    :param params: the parameters, moved into the buffer in this order; on one device, one dtype
    :param gradients: also give the parameters a gradient buffer (target networks, never trained, need none)
    """

    def __init__(self, params: Sequence[th.nn.Parameter], gradients: bool = True):
        self.params = list(params)
        # Each view starts on a 64-byte boundary, as a fresh allocation does: matrix kernels choose their
        # summation order by alignment (batch-1 products differ otherwise). The padding stays zero.
        align = max(64 // self.params[0].element_size(), 1)
        offsets, size = [], 0
        for param in self.params:
            offsets.append(size)
            size += -(-param.numel() // align) * align
        self.flat = th.nn.Parameter(self.params[0].new_zeros(size))
        for param, offset in zip(self.params, offsets, strict=True):
            view = self.flat.data[offset : offset + param.numel()].view_as(param)
            view.copy_(param.data)
            param.data = view
        self._grad_views = []
        if gradients:
            self.flat.grad = th.zeros_like(self.flat)
            self._grad_views = [
                self.flat.grad[offset : offset + param.numel()].view_as(param)
                for param, offset in zip(self.params, offsets, strict=True)
            ]
            self.zero_grad()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero the gradient buffer in place (``set_to_none`` is accepted for the optimizer API and ignored)."""
        self.flat.grad.zero_()  # type: ignore[union-attr]
        # Re-attach the views in case someone set a parameter's gradient to None
        for param, grad in zip(self.params, self._grad_views, strict=True):
            param.grad = grad


class LeanAdamStep:
    """
    ``step()`` for a default-configured ``th.optim.Adam`` over a single (flat) parameter: the arithmetic of PyTorch's
    single-tensor Adam, operation for operation (hence bit-identical results), without its per-call bookkeeping
    (which costs more than the arithmetic on small networks) and without temporaries (costly on large ones).
    The state lives in the optimizer as usual, so its ``state_dict`` is unchanged.

    :param optimizer: an Adam over one parameter, without weight decay, amsgrad, maximize, capturable, fused
    """

    def __init__(self, optimizer: th.optim.Optimizer):
        if not self.applies_to(optimizer):
            raise ValueError("LeanAdamStep needs a th.optim.Adam over one parameter with default options")
        self.optimizer = optimizer
        self.param = optimizer.param_groups[0]["params"][0]
        # A preallocated denominator: a fresh large temporary each step costs more than the arithmetic (page faults)
        self._denom = th.empty_like(self.param)

    @staticmethod
    def applies_to(optimizer: th.optim.Optimizer) -> bool:
        """Whether ``optimizer`` is an Adam configured so that this step reproduces it exactly."""
        if type(optimizer) is not th.optim.Adam or len(optimizer.param_groups) != 1:
            return False
        group = optimizer.param_groups[0]
        plain = not any(group.get(flag) for flag in ("amsgrad", "maximize", "capturable", "differentiable", "fused"))
        return plain and len(group["params"]) == 1 and group["weight_decay"] == 0

    @th.no_grad()
    def __call__(self, closure: Any = None) -> None:
        group, param = self.optimizer.param_groups[0], self.param
        state = self.optimizer.state[param]
        if not state:
            state["step"] = th.tensor(0.0, dtype=th.float32)
            state["exp_avg"] = th.zeros_like(param, memory_format=th.preserve_format)
            state["exp_avg_sq"] = th.zeros_like(param, memory_format=th.preserve_format)
        grad, exp_avg, exp_avg_sq, step_t = param.grad, state["exp_avg"], state["exp_avg_sq"], state["step"]
        beta1, beta2 = group["betas"]
        step_t += 1
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = step_t.item()
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = group["lr"] / bias_correction1
        denom = th.sqrt(exp_avg_sq, out=self._denom).div_(bias_correction2**0.5).add_(group["eps"])
        param.addcdiv_(exp_avg, denom, value=-step_size)
