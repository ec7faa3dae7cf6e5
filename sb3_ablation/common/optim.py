"""Flat parameter buffers and the Adam optimizer that steps one network as a single tensor."""

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch as th

# Options of th.optim.Adam that FlatAdam does not implement (it refuses them rather than ignoring them)
UNSUPPORTED_ADAM_OPTIONS = (
    "weight_decay",
    "amsgrad",
    "maximize",
    "capturable",
    "differentiable",
    "decoupled_weight_decay",
)


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
        self.offsets, size = [], 0
        for param in self.params:
            self.offsets.append(size)
            size += -(-param.numel() // align) * align
        self.flat = th.nn.Parameter(self.params[0].new_zeros(size))
        for param, view in zip(self.params, self.views(self.flat.data), strict=True):
            view.copy_(param.data)
            param.data = view
        self.has_gradients = gradients
        self._grad_views: list[th.Tensor] = []
        self._grad = th.zeros_like(self.flat) if gradients else self.flat.new_empty(0)
        if gradients:
            self.flat.grad = self._grad
            self._grad_views = self.views(self._grad)
            self.zero_grad()

    def views(self, flat: th.Tensor) -> list[th.Tensor]:
        """Each parameter's part of a tensor laid out like the buffer (the buffer itself, its gradient, Adam's moments)."""
        return [
            flat[offset : offset + param.numel()].view_as(param)
            for param, offset in zip(self.params, self.offsets, strict=True)
        ]

    def intact(self) -> bool:
        """Whether every parameter still lives in the buffer (``module.to(device)`` or a cast gives them new storage)."""
        return all(
            param.data.data_ptr() == view.data_ptr() and param.device == view.device and param.dtype == view.dtype
            for param, view in zip(self.params, self.views(self.flat.data), strict=True)
        )

    def rebuilt(self) -> "FlatParameters":
        """A new buffer holding the parameters where they are now (their device and dtype), values kept."""
        return FlatParameters(self.params, gradients=self.has_gradients)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero the gradient buffer in place (``set_to_none`` is accepted for the optimizer API and ignored)."""
        self._grad.zero_()
        self.flat.grad = self._grad
        # Re-attach the views in case someone set a parameter's gradient to None
        for param, grad in zip(self.params, self._grad_views, strict=True):
            param.grad = grad


class FlatAdam(th.optim.Adam):
    """
    Adam over the parameters of one network, kept in one contiguous buffer (:class:`FlatParameters`) and stepped as
    that single tensor: PyTorch's single-tensor Adam arithmetic, operation for operation (hence bit-identical
    results), in 8 kernels instead of 8 per parameter, with a preallocated denominator (a fresh large temporary
    each step costs page faults).

    Checkpoints keep PyTorch's layout: ``state_dict`` returns what ``th.optim.Adam`` over the separate parameters
    returns (one state per parameter, as SB3 saves it), and ``load_state_dict`` takes that layout. Only plain
    Adam: the options in ``UNSUPPORTED_ADAM_OPTIONS`` must stay at their defaults (``foreach`` is accepted and has
    no effect: there is one tensor). ``fused=True`` (the speed mode) steps the buffer with PyTorch's fused Adam
    instead: one kernel, other rounding than SB3.

    :param params: the parameters of one network; they become views into the buffer
    :param lr: learning rate
    :param kwargs: the other options of ``th.optim.Adam`` (``betas``, ``eps``, ``foreach``, ``fused``)
    """

    def __init__(self, params: Sequence[th.nn.Parameter], lr: float = 1e-3, **kwargs: Any):
        if not self.supports(kwargs):
            unsupported = [name for name in UNSUPPORTED_ADAM_OPTIONS if kwargs.get(name)]
            raise ValueError(f"FlatAdam implements plain Adam only, got {', '.join(unsupported)}")
        self.flat_params = FlatParameters(list(params))
        super().__init__([self.flat_params.flat], lr=lr, **kwargs)
        self._denom: th.Tensor | None = None  # allocated at the first exact step

    @staticmethod
    def supports(optimizer_kwargs: dict[str, Any]) -> bool:
        """Whether ``th.optim.Adam(**optimizer_kwargs)`` is plain Adam, which this optimizer runs (exactly unless fused)."""
        return not any(optimizer_kwargs.get(name) for name in UNSUPPORTED_ADAM_OPTIONS)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if getattr(self, "flat_params", None) is not None and self.param_groups:
            raise ValueError("FlatAdam holds one network's parameters in one group; it takes no further groups")
        super().add_param_group(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero the gradient buffer in place (a zero gradient is what ``set_to_none`` leads to in Adam)."""
        self.flat_params.zero_grad()

    @th.no_grad()
    # typeshed's Optimizer.step is overloaded on the closure; this is the signature of Adam.step
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        group, param = self.param_groups[0], self.flat_params.flat
        if group["fused"]:
            return super().step(closure)
        loss = None
        if closure is not None:
            with th.enable_grad():
                loss = closure()
        state = self.state[param]
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
        if self._denom is None:
            self._denom = th.empty_like(param)
        denom = th.sqrt(exp_avg_sq, out=self._denom).div_(bias_correction2**0.5).add_(group["eps"])
        param.addcdiv_(exp_avg, denom, value=-step_size)
        return loss

    def state_dict(self) -> dict[str, Any]:
        """The state of ``th.optim.Adam`` over the separate parameters: one state per parameter, PyTorch's layout."""
        options = {key: value for key, value in self.param_groups[0].items() if key != "params"}
        flat_state = self.state.get(self.flat_params.flat)
        state: dict[int, dict[str, th.Tensor]] = {}
        if flat_state:
            exp_avgs = self.flat_params.views(flat_state["exp_avg"])
            exp_avg_sqs = self.flat_params.views(flat_state["exp_avg_sq"])
            for index, (exp_avg, exp_avg_sq) in enumerate(zip(exp_avgs, exp_avg_sqs, strict=True)):
                state[index] = {
                    "step": flat_state["step"].clone(),
                    "exp_avg": exp_avg.clone(),
                    "exp_avg_sq": exp_avg_sq.clone(),
                }
        return {"state": state, "param_groups": [{**options, "params": list(range(len(self.flat_params.params)))}]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """
        Load the state of an Adam over this network's parameters, in PyTorch's per-parameter layout (SB3's
        checkpoints). Everything is checked before anything changes.
        """
        groups = state_dict["param_groups"]
        if len(groups) != 1:
            raise ValueError(f"loaded state dict has {len(groups)} parameter groups, FlatAdam has one")
        flat = self.flat_params.flat
        saved = [state_dict["state"].get(index) for index in groups[0]["params"]]
        if len(saved) != len(self.flat_params.params):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        flat_state = self._flat_state(saved)
        self.state = defaultdict(dict)
        self.param_groups[0].update({key: value for key, value in groups[0].items() if key != "params"})
        if flat_state and self.param_groups[0]["fused"]:
            # PyTorch's fused step keeps the step count on the parameters' device, as th.optim.Adam loads it
            flat_state["step"] = flat_state["step"].to(device=flat.device, dtype=th.float32)
        if flat_state:
            self.state[flat] = flat_state

    def _flat_state(self, saved: list[dict[str, th.Tensor] | None]) -> dict[str, th.Tensor]:
        """Adam's per-parameter states gathered into the flat layout (empty before the first step)."""
        if all(state is None or not state for state in saved):
            return {}
        states = [state for state in saved if state is not None and set(state) == {"step", "exp_avg", "exp_avg_sq"}]
        if len(states) != len(saved):
            raise ValueError("loaded Adam state is not plain Adam's (step, exp_avg, exp_avg_sq) for every parameter")
        steps = {float(state["step"]) for state in states}
        if len(steps) != 1:
            raise ValueError(f"loaded Adam state has different step counts per parameter ({sorted(steps)})")
        for index, (state, param) in enumerate(zip(states, self.flat_params.params, strict=True)):
            if state["exp_avg"].shape != param.shape:
                raise ValueError(
                    f"loaded Adam state of parameter {index} has shape {tuple(state['exp_avg'].shape)}, "
                    f"the parameter has {tuple(param.shape)}"
                )
        flat = self.flat_params.flat
        flat_state = {"step": states[0]["step"].clone()}
        for key in ("exp_avg", "exp_avg_sq"):
            flat_state[key] = th.zeros_like(flat, memory_format=th.preserve_format)
            for view, state in zip(self.flat_params.views(flat_state[key]), states, strict=True):
                view.copy_(state[key])
        return flat_state

    def follow_parameters(self) -> None:
        """
        After ``module.to(device)`` (or a cast) gave the parameters new storage, put them into a new flat buffer
        where they are now and carry Adam's state over. Nothing happens while they still live in the buffer.
        """
        if self.flat_params.intact():
            return
        state = self.state_dict()
        self.flat_params = self.flat_params.rebuilt()
        self.param_groups[0]["params"] = [self.flat_params.flat]
        self._denom = None
        self.load_state_dict(state)
