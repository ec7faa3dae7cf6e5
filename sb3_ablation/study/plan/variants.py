"""Ablation variants: names, presets, and the switch values each one passes to ``AblatableTD3``.

A variant name is one of:

- ``td3``: every switch on (full TD3);
- ``no_<switch>`` and combinations joined with ``+``, e.g. ``no_target_networks+no_delayed_policy_update``: TD3 with
  those switches off;
- ``ddpg``: TD3's own three additions switched off (``target_policy_smoothing``, ``delayed_policy_update``,
  ``clipped_double_q``), i.e. DDPG with TD3's architecture and hyperparameters (the TD3 paper's "AHE");
  ``ddpg+<switch>`` adds switches back, e.g. ``ddpg+clipped_double_q``;
- reference rows: ``ref_ddpg`` (the from-scratch ``DDPG``, with the ``ddpg_scratch`` hyperparameters) and
  ``ref_sb3_td3`` (Stable-Baselines3's own ``TD3``, with rl-zoo's ``td3`` hyperparameters).

Presets: ``leave-one-out`` (``td3`` and each switch off alone: 7 variants), ``factorial`` (all 2^6 = 64 switch
combinations), ``factorial:<switch>,<switch>,...`` (the full 2^k design over the named switches, the others on; e.g.
``factorial:target_networks,delayed_policy_update`` is 4 variants), ``fraction`` (the 2^(6-1) half fraction with
I = ABCDEF, 32 variants), ``fraction:<switch>,...[/<generators>]`` (see :mod:`~sb3_ablation.study.plan.designs`)
and ``ddpg-to-td3`` (``ddpg``, then TD3's components added one at a time: clipped double Q, target policy smoothing,
delayed policy update; the last step is ``td3``).

Every configuration has one canonical name (the shortest spelling, ``no_...`` preferred on a tie, switches in
``SWITCHES`` order), so the same configuration asked for twice (say by ``leave-one-out`` and ``ddpg-to-td3``) is run
once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sb3_ablation.common.suggestions import did_you_mean
from sb3_ablation.study.plan.designs import Design, parse_design
from sb3_ablation.switches import BY_NAME, DEFAULTS, SWITCHES, TABLE, TD3_ADDITIONS

DDPG_SWITCHES = {switch: switch not in TD3_ADDITIONS for switch in SWITCHES}
TD3_SWITCHES = dict(DEFAULTS)
# the variant of each switch off alone (``no_<switch>``) -> the switch
SWITCH_OFF_VARIANTS = {switch.variant: switch.name for switch in TABLE}

# reference rows: variant name -> rl-zoo algorithm name (its hyperparameters and class)
REFERENCE_ALGOS = {"ref_ddpg": "ddpg_scratch", "ref_sb3_td3": "td3"}
ABLATABLE_ALGO = "ablatable_td3"

PRESETS = ("leave-one-out", "factorial", "fraction", "ddpg-to-td3")
#: prefixes of a design over some switches (:mod:`~sb3_ablation.study.plan.designs`): ``factorial:<switch>,...``
DESIGN_PREFIXES = ("factorial:", "fraction:")


@dataclass(frozen=True)
class Variant:
    """
    One row of the study: which algorithm to train and with which switches.

    :param name: canonical variant name (see the module docstring)
    :param algo: rl-zoo algorithm name whose hyperparameters and class are used
        (``ablatable_td3``, ``ddpg_scratch`` or ``td3``)
    :param switches: the six switch values passed to ``AblatableTD3`` (empty for reference rows)
    """

    name: str
    algo: str
    switches: dict[str, bool] = field(default_factory=dict, hash=False)

    @property
    def is_reference(self) -> bool:
        return self.algo != ABLATABLE_ALGO

    def describe(self) -> str:
        """One line saying what the variant is, for reports."""
        if self.name == "ref_ddpg":
            return "reference: DDPG (from scratch, ddpg_scratch hyperparameters)"
        if self.name == "ref_sb3_td3":
            return "reference: Stable-Baselines3's TD3 (rl-zoo td3 hyperparameters)"
        off = [switch for switch in SWITCHES if not self.switches[switch]]
        return "all switches on (full TD3)" if not off else "off: " + ", ".join(off)


def canonical_name(switches: dict[str, bool]) -> str:
    """
    The canonical name of a switch configuration.

    :param switches: a value for each of the six switches
    :return: ``td3``, ``ddpg``, ``no_a+no_b`` or ``ddpg+a``, whichever is shortest (``no_...`` on a tie)
    """
    if switches == TD3_SWITCHES:
        return "td3"
    if switches == DDPG_SWITCHES:
        return "ddpg"
    from_td3 = [BY_NAME[switch].variant for switch in SWITCHES if not switches[switch]]
    from_ddpg = [
        (switch if switches[switch] else BY_NAME[switch].variant)
        for switch in SWITCHES
        if switches[switch] != DDPG_SWITCHES[switch]
    ]
    if len(from_ddpg) < len(from_td3):
        return "+".join(["ddpg", *from_ddpg])
    return "+".join(from_td3)


def _unknown(token: str, name: str) -> ValueError:
    candidates = ["td3", "ddpg", *REFERENCE_ALGOS, *PRESETS, *SWITCHES, *SWITCH_OFF_VARIANTS]
    hint = did_you_mean(token, candidates)
    return ValueError(
        f"unknown variant part {token!r} in {name!r}{hint}; expected td3, ddpg, ref_ddpg, ref_sb3_td3, a preset "
        f"({', '.join(PRESETS)}), or parts joined with '+' among no_<switch> / <switch> with switch in {', '.join(SWITCHES)}"
    )


def parse_variant(name: str) -> Variant:
    """
    Parse one variant name into a :class:`Variant` (with its canonical name).

    :param name: e.g. ``td3``, ``no_clipped_double_q``, ``ddpg+clipped_double_q``, ``ref_sb3_td3``
    :return: the variant
    """
    name = name.strip()
    if name in REFERENCE_ALGOS:
        return Variant(name, REFERENCE_ALGOS[name])
    tokens = [token.strip() for token in name.split("+")]
    if tokens[0] in ("td3", "ddpg"):
        switches = dict(TD3_SWITCHES if tokens[0] == "td3" else DDPG_SWITCHES)
        modifiers = tokens[1:]
    else:
        switches = dict(TD3_SWITCHES)
        modifiers = tokens
    for token in modifiers:
        if token in SWITCH_OFF_VARIANTS:
            switches[SWITCH_OFF_VARIANTS[token]] = False
        elif token in SWITCHES:
            switches[token] = True
        else:
            raise _unknown(token, name)
    return Variant(canonical_name(switches), ABLATABLE_ALGO, switches)


def design_names(design: Design) -> list[str]:
    """The canonical names of a design's cells: ``td3`` first, then by the number of switches off."""
    names = [canonical_name(cell) for cell in design.cells]
    return sorted(names, key=lambda name: sum(not on for on in parse_variant(name).switches.values()))


def expand_preset(preset: str) -> list[str]:
    """
    The variant names of a preset.

    :param preset: ``leave-one-out``, ``ddpg-to-td3`` or a design (``factorial``, ``fraction``, ``factorial:<switch>,...``,
        ``fraction:<switch>,...[/<generators>]``: :func:`~sb3_ablation.study.plan.designs.parse_design`)
    :return: variant names, the full TD3 (or DDPG for the chain) first
    """
    if preset == "leave-one-out":
        return ["td3", *SWITCH_OFF_VARIANTS]
    design = parse_design(preset)
    if design is not None:
        return design_names(design)
    if preset == "ddpg-to-td3":
        chain, switches = ["ddpg"], dict(DDPG_SWITCHES)
        for switch in TD3_ADDITIONS:
            switches[switch] = True
            chain.append(canonical_name(switches))
        return chain
    raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")


def resolve_variants(names: Iterable[str] | str) -> list[Variant]:
    """
    Expand presets and parse names into a de-duplicated list of variants (first occurrence kept).

    :param names: variant names and/or preset names (a single string may hold several, separated by commas or spaces)
    :return: the variants in order
    """
    if isinstance(names, str):
        names = [names]
    tokens: list[str] = []
    for item in names:
        for word in str(item).split():
            # the commas of factorial:a,b and fraction:a,b/E=AB name its switches; elsewhere they separate variants
            tokens += [word] if word.startswith(DESIGN_PREFIXES) else [token for token in word.split(",") if token]
    if not tokens:
        raise ValueError("no variants given; expected a preset (leave-one-out, factorial, ddpg-to-td3) or variant names")
    variants: dict[str, Variant] = {}
    for token in tokens:
        is_preset = token in PRESETS or token.startswith(DESIGN_PREFIXES)
        for name in expand_preset(token) if is_preset else [token]:
            variant = parse_variant(name)
            variants.setdefault(variant.name, variant)
    return list(variants.values())


def baseline_name(variant_names: Sequence[str]) -> str | None:
    """The variant the report compares the others against: ``td3`` when present, else ``None``."""
    return "td3" if "td3" in variant_names else None
