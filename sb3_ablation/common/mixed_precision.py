"""
The speed mode: bfloat16 matrix products for the large hidden layers where the hardware multiplies bfloat16 faster
than float32, and the fastest float32 layout of the critics elsewhere. The algorithm is unchanged; results are not
bit-identical to SB3 (other rounding, and batched critics draw their initial weights differently).

What runs in bfloat16: only the hidden-to-hidden products of the actor and critic MLPs (forward and backward), which
are nearly all of a step's arithmetic at the network sizes MuJoCo studies use (at ``[400, 300]`` the ``400 x 300``
layer holds 97% of the multiply-adds). Everything else stays float32: the first layer (observations are not
rounded), the output layer (Q-values and actions), the parameters themselves (master weights, cast to bfloat16 on the
fly in each product), their gradients, Adam's state, the TD targets and the losses.

How it chooses, per model:

- bfloat16 needs a device with native bfloat16 products (CPU: AVX-512 BF16 or AMX as oneDNN reports it; CUDA:
  ``torch.cuda.is_bf16_supported``) and a hidden-to-hidden product of at least ``MIN_BFLOAT16_MACS`` multiply-adds
  (smaller ones lose to the casts). Having the instructions is not enough: on some CPUs with AVX-512 BF16 oneDNN's
  bfloat16 products run at half the float32 speed. So a short measurement decides: the three products of that layer
  (forward, input gradient, weight gradient) are timed in both precisions, best of several repeats, once per process
  and shape; bfloat16 is used only when at least ``BFLOAT16_MARGIN`` times faster, a margin that keeps the choice
  the same from run to run on a given machine.
- Adam runs PyTorch's fused implementation on each network's flat parameter buffer (``FlatAdam`` with
  ``fused=True``, built by ``DDPGPolicy.make_optimizer``: one pass over the parameters; twice as fast as the exact
  step of the default mode on large networks), unless another optimizer or ``fused=False`` is given.
- the critics run as one batched network (one batched product for all critics per layer) when the largest hidden
  product has at most ``MAX_BATCHED_CRITIC_MACS`` multiply-adds: there per-kernel overhead dominates; above it large
  float32 products run faster as separate networks on CPU.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch as th
from stable_baselines3.common.torch_layers import get_actor_critic_arch
from torch import nn
from torch.nn import functional as F

if TYPE_CHECKING:  # the mixin's host, for the type checker (at run time a mixin has no base)
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm as _OffPolicyAlgorithm
else:
    _OffPolicyAlgorithm = object

# Smallest hidden-to-hidden product (batch x in x out multiply-adds) worth running in bfloat16 (256 x 128 x 128)
MIN_BFLOAT16_MACS = 256 * 128 * 128
# bfloat16 must be this many times faster than float32 on the measured products to be chosen
BFLOAT16_MARGIN = 1.15
# Largest hidden-to-hidden product for which one batched network of all critics beats separate ones (256 x 96 x 96);
# below MIN_BFLOAT16_MACS, so batched critics always run in float32
MAX_BATCHED_CRITIC_MACS = 256 * 96 * 96
PRECISIONS = ("bfloat16", "float32")


@dataclass(frozen=True)
class SpeedModeInfo:
    """
    What the speed mode chose for a model, and why (``model.speed_mode_info``).

    :param precision: ``"bfloat16"`` (large hidden-to-hidden products in bfloat16) or ``"float32"``
    :param batched_critics: whether all critics run as one batched network
    :param reason: why, in words (with the measured bfloat16 speed-up where one was measured)
    """

    precision: str
    batched_critics: bool
    reason: str

    def __str__(self) -> str:
        layout = "critics batched in one network" if self.batched_critics else "critics as separate networks"
        return f"speed mode: {self.precision} hidden-layer products, {layout} ({self.reason})"


@functools.cache
def cpu_has_bfloat16_instructions() -> bool:
    """:return: whether this CPU has native bfloat16 products (AVX-512 BF16 or AMX, as oneDNN sees it)"""
    return bool(th.backends.mkldnn.is_available() and th.ops.mkldnn._is_mkldnn_bf16_supported())


def device_has_bfloat16_instructions(device: th.device) -> bool:
    """:return: whether ``device`` multiplies bfloat16 matrices natively"""
    if device.type == "cuda":
        return th.cuda.is_bf16_supported(including_emulation=False)
    return device.type == "cpu" and cpu_has_bfloat16_instructions()


@functools.cache
def bfloat16_speedup(device: th.device, batch_size: int, in_features: int, out_features: int) -> float:
    """
    Measured speed of one linear layer's three products (forward, input gradient, weight gradient) in bfloat16,
    casts included, relative to float32: best of 5 timings of 3 rounds each. Cached per process and shape.

    :return: float32 time / bfloat16 time (above 1: bfloat16 is faster)
    """
    generator = th.Generator().manual_seed(0)
    inputs = th.randn(batch_size, in_features, generator=generator).to(device)
    weight = th.randn(out_features, in_features, generator=generator).to(device)
    grad_output = th.randn(batch_size, out_features, generator=generator).to(device)

    def products(dtype: th.dtype) -> None:
        x, w, g = inputs.to(dtype), weight.to(dtype), grad_output.to(dtype)
        x.mm(w.t())
        g.mm(w)
        g.t().mm(x).float()

    def best_time(dtype: th.dtype) -> float:
        products(dtype)  # warm-up: kernel selection, allocations
        timings = []
        for _ in range(5):
            if device.type == "cuda":
                th.cuda.synchronize(device)
            start = time.perf_counter()
            for _ in range(3):
                products(dtype)
            if device.type == "cuda":
                th.cuda.synchronize(device)
            timings.append(time.perf_counter() - start)
        return min(timings)

    return best_time(th.float32) / best_time(th.bfloat16)


def hidden_products(net_arch: list[int], batch_size: int) -> list[tuple[int, int, int]]:
    """:return: ``(batch, in, out)`` of each hidden-to-hidden product of an MLP with hidden sizes ``net_arch``"""
    return [(batch_size, size_in, size_out) for size_in, size_out in itertools.pairwise(net_arch)]


def choose_speed_mode(
    device: th.device | str, net_arch: list[int], batch_size: int, precision: str | None = None
) -> SpeedModeInfo:
    """
    The speed mode's choice for one model.

    :param device: the model's device
    :param net_arch: hidden layer sizes of the critics
    :param batch_size: minibatch size of a gradient step
    :param precision: force ``"bfloat16"`` or ``"float32"`` (None: choose)
    :return: the precision and critic layout, with the reason
    """
    device = th.device(device)
    products = hidden_products(net_arch, batch_size)
    largest = max(products, key=lambda shape: shape[0] * shape[1] * shape[2], default=None)
    macs = largest[0] * largest[1] * largest[2] if largest else 0
    batched = macs <= MAX_BATCHED_CRITIC_MACS
    if precision is not None:
        return SpeedModeInfo(precision, batched, "precision set by speed_mode")
    if not device_has_bfloat16_instructions(device):
        return SpeedModeInfo("float32", batched, f"{device.type} has no native bfloat16 products")
    if largest is None or macs < MIN_BFLOAT16_MACS:
        reason = f"hidden products too small for bfloat16 ({macs:,} < {MIN_BFLOAT16_MACS:,} multiply-adds)"
        return SpeedModeInfo("float32", batched, reason)
    speedup = bfloat16_speedup(device, *largest)
    shape = "x".join(map(str, largest))
    measured = f"bfloat16 products measured at {speedup:.2f}x float32 speed on {device.type} ({shape})"
    if speedup < BFLOAT16_MARGIN:
        return SpeedModeInfo("float32", batched, measured)
    return SpeedModeInfo("bfloat16", batched, f"{measured}; float32 master weights")


class Bfloat16Linear(nn.Linear):
    """A linear layer whose product runs in bfloat16: float32 parameters cast on the fly, a bfloat16 output."""

    def forward(self, input: th.Tensor) -> th.Tensor:
        return F.linear(input.to(th.bfloat16), self.weight.to(th.bfloat16), self.bias.to(th.bfloat16))


class Float32Linear(nn.Linear):
    """A float32 linear layer that also takes a bfloat16 input (the layer after a bfloat16 one)."""

    def forward(self, input: th.Tensor) -> th.Tensor:
        return F.linear(input.float(), self.weight, self.bias)


def linear_with_parameters_of(layer_class: type[nn.Linear], layer: nn.Linear) -> nn.Linear:
    """A ``layer_class`` layer holding ``layer``'s parameters (the same tensors; built on the meta device, so no
    random number is drawn for weights it does not keep)."""
    new = layer_class(layer.in_features, layer.out_features, bias=layer.bias is not None, device="meta")
    new.weight, new.bias = layer.weight, layer.bias
    new.train(layer.training)
    return new


def use_bfloat16_hidden_layers(network: nn.Module, batch_size: int) -> int:
    """
    Run the large hidden-to-hidden products of every MLP in ``network`` in bfloat16: called by the policy as it
    builds its networks (the speed mode's ``bfloat16_batch_size``).

    Those linear layers are replaced by :class:`Bfloat16Linear` layers holding the same parameters (so state dicts,
    optimizers and saved models are unchanged). The first and last layer of each MLP stay float32 (the layer after a
    bfloat16 one becomes a :class:`Float32Linear`), so each MLP still takes and returns float32 tensors. Batched
    critics are left in float32: they are chosen only for networks below the bfloat16 size threshold.

    :param network: an actor or a critic
    :param batch_size: the minibatch size, for the size rule
    :return: the number of layers switched to bfloat16
    """
    switched = 0
    for module in list(network.modules()):
        if not isinstance(module, nn.Sequential):
            continue
        linears = [(position, layer) for position, layer in enumerate(module) if isinstance(layer, nn.Linear)]
        previous_bfloat16 = False
        for index, (position, layer) in enumerate(linears):
            hidden = 0 < index < len(linears) - 1
            bfloat16 = hidden and batch_size * layer.in_features * layer.out_features >= MIN_BFLOAT16_MACS
            layer_class = Bfloat16Linear if bfloat16 else Float32Linear if previous_bfloat16 else None
            if layer_class is not None:
                module[position] = linear_with_parameters_of(layer_class, layer)
            switched += bfloat16
            previous_bfloat16 = bfloat16
    return switched


class SpeedModeMixin(_OffPolicyAlgorithm):
    """
    Off-policy algorithm mixin for ``speed_mode``: ``_configure_speed_mode`` (before the policy is built) chooses the
    precision and critic layout, the algorithm passes them to the policy (``batched_critics``, ``fused_adam`` for
    PyTorch's fused Adam, ``bfloat16_batch_size`` for bfloat16 hidden layers). ``speed_mode`` is ``False`` (the
    bit-exact default), ``True`` (choose), or ``"bfloat16"`` / ``"float32"`` to force a precision.
    """

    speed_mode: bool | str
    speed_mode_info: SpeedModeInfo | None = None
    # The critic layout chosen for a speed-mode model, saved with it: its weights have that shape wherever it is loaded
    _batched_critics: bool | None = None

    def _configure_speed_mode(self) -> None:
        mode = self.speed_mode
        if mode not in (True, False, *PRECISIONS):
            raise ValueError(f"speed_mode must be True, False, 'bfloat16' or 'float32', got {mode!r}")
        self.speed_mode_info = None
        if mode is False:
            return
        _, critic_arch = get_actor_critic_arch(self.policy_kwargs.get("net_arch", [400, 300]))
        precision = mode if isinstance(mode, str) else None
        info = choose_speed_mode(self.device, critic_arch, self.batch_size, precision)
        # A layout already given is kept: the user's `batched_critics` in policy_kwargs, or the saved model's.
        # The precision is chosen again: the weights do not depend on it
        given = self.policy_kwargs.get("batched_critics", self._batched_critics)
        if given is not None:
            info = dataclasses.replace(info, batched_critics=bool(given))
        self.speed_mode_info = info
        self._batched_critics = info.batched_critics
        if self.verbose >= 1:
            print(info)
