"""
The six component switches of AblatableTD3, in one table (no torch: the study and the docs read it too).

Each row says what the switch is: its name and default, what ``False`` means, the hyperparameters it makes unused,
the policy arguments it implies, whether ``load`` may change it (and why not), and its study variant. The algorithm's
warnings, implied policy arguments and load refusals, the study's variants and the README's table
(:func:`markdown_table`) are read from here.

A seventh switch is a row here, its keyword in ``AblatableTD3.__init__`` (SB3's explicit signature, with its
``:param:`` line), the policy if it changes the networks, and one ``Component N`` branch in ``AblatableTD3.train()``;
``tests/integration/test_ablatable_td3.py`` checks that the table, the keywords and the branches agree, and that the
batched engine (``BatchedTD3.implemented_switches``, a ``Component N`` branch of its ``train()`` or
``batched/update.py``'s ``UpdateStep``) implements every switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Switch:
    """
    One component of TD3 over DDPG.

    :param name: the keyword of ``AblatableTD3`` (default ``True``: the component is on, as in TD3)
    :param component: its number, the ``Component N`` marking its branch in ``train()`` and the policies
    :param off: what ``False`` means (the docs' line)
    :param unused: the hyperparameters that ``False`` makes unused (a warning names them when set); ``n_critics`` is
        the policy argument of that name
    :param unused_note: how one of them is still used, if so (the docs' note)
    :param policy_when_off: the policy arguments that ``False`` implies (added when the policy is built)
    :param load_refusal: why ``load`` cannot change the switch (the saved model has the networks or buffer of its
        setting); ``None``: ``load`` may change it, since it acts only on the updates to come
    :param td3_addition: the position at which the study's ``ddpg-to-td3`` chain adds it back (TD3's three
        additions to DDPG, Fujimoto et al., 2018); ``None`` for the components DDPG already has
    """

    name: str
    component: int
    off: str
    unused: tuple[str, ...] = ()
    unused_note: str = ""
    policy_when_off: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    load_refusal: str | None = None
    td3_addition: int | None = None
    default: bool = True

    @property
    def variant(self) -> str:
        """The study's name for TD3 with this component off."""
        return f"no_{self.name}"

    @property
    def changeable_on_load(self) -> bool:
        return self.load_refusal is None

    def docs_row(self) -> str:
        """This switch's row of the README's table (markdown)."""
        unused = ", ".join(f'`policy_kwargs["{name}"]`' if name == "n_critics" else f"`{name}`" for name in self.unused)
        unused += f" ({self.unused_note})" if self.unused_note else ""
        policy = ", ".join(f"`{key}={value!r}`" for key, value in self.policy_when_off.items())
        load = "yes" if self.changeable_on_load else f"no: {self.load_refusal}"
        cells = [f"`{self.name}`", str(self.component), self.off, unused or "-", policy or "-", load, f"`{self.variant}`"]
        return "| " + " | ".join(cells) + " |"


TABLE: tuple[Switch, ...] = (
    Switch(
        "deterministic_policy",
        1,
        "a tanh-squashed Gaussian actor (state-dependent mean and log-std) trained by the reparameterization trick to "
        "maximise critic 1 (no entropy term); it explores by sampling itself and `predict(deterministic=True)` returns "
        "the squashed mean; target actions are sampled from the target actor. So that it explores at first as TD3 "
        "does, its log-std head starts with zero weights and the bias log(sigma): in every state the pre-tanh standard "
        "deviation starts at exactly the `sigma` of the given `action_noise` (per action dimension), 0.1 (TD3's "
        "exploration noise) without one; `policy_kwargs=dict(actor_initial_std=...)` sets it directly. "
        "`train/actor_std` logs how it evolves",
        unused=("action_noise",),
        unused_note="only its `sigma` is used, as the initial std",
        policy_when_off=MappingProxyType({"deterministic_actor": False}),
        load_refusal="the saved actor is of the other kind (deterministic or Gaussian)",
    ),
    Switch(
        "replay_buffer",
        2,
        "online updates from the newest transition only: a buffer of one transition per env, batches of one",
        unused=("buffer_size", "batch_size", "optimize_memory_usage"),
        load_refusal="the buffer size and batch size were set for the saved setting; build a new model and copy the "
        "weights with set_parameters",
    ),
    Switch(
        "target_networks",
        3,
        "no target copies: targets are computed by the online actor and critics (under `no_grad`)",
        unused=("tau",),
        policy_when_off=MappingProxyType({"target_networks": False}),
        load_refusal="target copies exist only when saved with target_networks=True",
    ),
    Switch(
        "target_policy_smoothing",
        4,
        "no clipped noise on target actions",
        unused=("target_policy_noise", "target_noise_clip"),
        td3_addition=2,
    ),
    Switch(
        "delayed_policy_update",
        5,
        "the actor (and the targets) are updated after every critic update",
        unused=("policy_delay",),
        td3_addition=3,
    ),
    Switch(
        "clipped_double_q",
        6,
        "a single critic bootstrapped from its own target, no minimum",
        unused=("n_critics",),
        policy_when_off=MappingProxyType({"n_critics": 1}),
        load_refusal="the saved model has the critics of the saved setting (two, or one)",
        td3_addition=1,
    ),
)

BY_NAME: Mapping[str, Switch] = MappingProxyType({switch.name: switch for switch in TABLE})
# The switch names in the table's order (the order of the classic exercise)
SWITCHES: tuple[str, ...] = tuple(BY_NAME)
DEFAULTS: Mapping[str, bool] = MappingProxyType({switch.name: switch.default for switch in TABLE})
# TD3's three additions to DDPG, in the order the study's ddpg-to-td3 chain adds them back
TD3_ADDITIONS: tuple[str, ...] = tuple(
    switch.name for switch in sorted(TABLE, key=lambda switch: switch.td3_addition or 0) if switch.td3_addition
)

TABLE_HEADER = (
    "| switch (all `True` by default) | component | `False` means | hyperparameters it makes unused "
    "| policy arguments it implies | `load` may change it | study variant |\n|---|---:|---|---|---|---|---|"
)


def check_switch(name: str, value: Any) -> bool:
    """A component switch's value as a bool; a one-line ``TypeError`` for anything but True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"switch {name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def markdown_table() -> str:
    """The README's table of the switches."""
    return "\n".join([TABLE_HEADER, *(switch.docs_row() for switch in TABLE)])
