"""One linear layer of several networks: weights stacked, one batched matrix product."""

import math
from collections.abc import Sequence

import torch as th
from torch import nn


class EnsembleLinear(nn.Module):
    """
    The ``nn.Linear`` layers of K networks (K critics, or K agents) as one layer: weights stacked ``(K, in, out)``,
    biases ``(K, 1, out)``, one ``torch.baddbmm`` per call. Input ``(K, batch, in)`` gives ``(K, batch, out)``;
    ``(K, in)`` (one input per network, as when acting) gives ``(K, out)``.

    Initialized as ``nn.Linear`` (``U(-1/sqrt(in), 1/sqrt(in))`` for weights and biases), drawn as one tensor each;
    :meth:`from_linears` stacks existing layers instead.

    :param n_networks: K
    :param in_features: input size of each network's layer
    :param out_features: output size of each network's layer
    """

    def __init__(self, n_networks: int, in_features: int, out_features: int):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(th.empty(n_networks, in_features, out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(th.empty(n_networks, 1, out_features).uniform_(-bound, bound))

    @classmethod
    def from_linears(cls, layers: Sequence[nn.Linear]) -> "EnsembleLinear":
        """
        The layer of network k is ``layers[k]`` (weights copied; all of one shape, with a bias). Built on the meta
        device first, so that no random number is drawn.
        """
        if any(layer.bias is None for layer in layers):
            raise ValueError("EnsembleLinear needs layers with a bias")
        with th.device("meta"):
            ensemble = cls(len(layers), layers[0].in_features, layers[0].out_features)
        ensemble.weight = nn.Parameter(th.stack([layer.weight.detach().t() for layer in layers]).contiguous())
        ensemble.bias = nn.Parameter(th.stack([layer.bias.detach() for layer in layers]).unsqueeze(1))
        return ensemble

    def forward(self, inputs: th.Tensor) -> th.Tensor:
        if inputs.dim() == 2:
            return th.baddbmm(self.bias, inputs.unsqueeze(1), self.weight).squeeze(1)
        return th.baddbmm(self.bias, inputs, self.weight)

    def member_forward(self, index: int, inputs: th.Tensor) -> th.Tensor:
        """Network ``index``'s layer alone, on ``(batch, in)`` inputs: a plain matrix product on its slice."""
        return th.addmm(self.bias[index], inputs, self.weight[index])

    @th.no_grad()
    def copy_to(self, index: int, layer: nn.Linear) -> None:
        """Write network ``index``'s weights into a plain ``nn.Linear``."""
        layer.weight.copy_(self.weight[index].t())
        layer.bias.copy_(self.bias[index, 0])

    @th.no_grad()
    def copy_from(self, index: int, layer: nn.Linear) -> None:
        """Set network ``index``'s weights from a plain ``nn.Linear``."""
        self.weight[index].copy_(layer.weight.t())
        self.bias[index, 0].copy_(layer.bias)
