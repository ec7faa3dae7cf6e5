"""The factorial analysis of a study: main effects and two-way interactions of the switches of a 2^k design.

A study whose variants include the full 2^k design over some switches (the others on), such as
``--variants factorial:target_networks,clipped_double_q``, lets every run inform every effect. Within each seed (a
block: the 2^k runs of one seed share their initial weights and evaluation episodes) the outcome ``y`` of the 2^k
runs gives, with ``z_A = +1`` where switch A is off and ``-1`` where it is on:

- the **main effect of removing A**: the mean of ``y`` over the runs with A off minus the mean over the runs with A on,
  ``(2 / 2^k) sum y z_A``. It is averaged over the levels of the other k - 1 switches, which is a different question
  from the leave-one-out effect (removing A from full TD3, every other switch on): the two agree only where A does not
  interact with the others;
- the **interaction of A and B**: the effect of removing A when B is off minus the effect of removing A when B is on
  (symmetric in A and B), ``(4 / 2^k) sum y z_A z_B``: 0 when the two components act independently.

Each effect is a per-seed contrast, so the seeds give its sampling distribution: a one-sample t-test over the seeds
(equivalently, the linear model with seed blocks where the effect-by-seed interaction is the error term), Holm's
correction within the family of the k main effects and k(k-1)/2 interactions of one env and outcome, and the same three
verdicts as the leave-one-out comparisons (:func:`sb3_ablation.study.analyse.inference.compare_family`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sb3_ablation import SWITCHES
from sb3_ablation.study.analyse.analysis import EnvResult, Section, outcome_values
from sb3_ablation.study.analyse.inference import Comparison, compare_family
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.variants import parse_variant
from sb3_ablation.study.render.json import comparison_json
from sb3_ablation.study.store.runs import safe_name

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.results import StudyData
    from sb3_ablation.study.plan.analysis_plan import AnalysisPlan

#: the symbol between two switch names in the name of their interaction
INTERACTION = " x "


@dataclass(frozen=True)
class FactorialDesign:
    """
    The full 2^k design over ``switches`` found among a study's variants.

    :param switches: the switches that vary (the others are on in every cell)
    :param cells: each cell's variant name, keyed by the levels of ``switches`` (``True`` = on)
    """

    switches: tuple[str, ...]
    cells: dict[tuple[bool, ...], str]

    @property
    def effects(self) -> list[str]:
        """The effect names: one main effect per switch, then every two-way interaction."""
        pairs = itertools.combinations(self.switches, 2)
        return [*self.switches, *(a + INTERACTION + b for a, b in pairs)]


@dataclass(frozen=True)
class FactorialResult:
    """
    The factorial analysis of one outcome on one env.

    :param design: the design the runs form
    :param seeds: the seeds with a finished run in every cell (the blocks used)
    :param incomplete_seeds: seeds with some but not all cells finished (left out)
    :param comparisons: effect name -> its estimate, CI, raw and Holm-adjusted p and verdict
    :param cell_means: each cell's mean outcome over ``seeds`` (for the interaction plot)
    """

    design: FactorialDesign
    seeds: tuple[int, ...]
    incomplete_seeds: tuple[int, ...]
    comparisons: dict[str, Comparison]
    cell_means: dict[tuple[bool, ...], float]


def find_design(variant_switches: Mapping[str, Mapping[str, bool]]) -> FactorialDesign | None:
    """
    The largest full 2^k design (k >= 2, the other switches on) among the variants, if there is one.

    :param variant_switches: variant name -> its six switch values (reference rows left out)
    :return: the design, or ``None`` (a leave-one-out study has none: it lacks the runs with two switches off)
    """
    by_switches = {tuple(switches[name] for name in SWITCHES): variant for variant, switches in variant_switches.items()}
    varying = [name for name in SWITCHES if any(not switches[name] for switches in variant_switches.values())]
    for k in range(len(varying), 1, -1):
        for subset in itertools.combinations(varying, k):
            cells = {}
            for levels in itertools.product((True, False), repeat=k):
                setting = dict(zip(subset, levels, strict=True))
                key = tuple(setting.get(name, True) for name in SWITCHES)
                if key not in by_switches:
                    break
                cells[levels] = by_switches[key]
            else:
                return FactorialDesign(tuple(subset), cells)
    return None


def seed_contrasts(design: FactorialDesign, outcomes: Mapping[tuple[bool, ...], float]) -> dict[str, float]:
    """
    Every main effect and two-way interaction of one seed's 2^k outcomes (see the module docstring).

    :param design: the design
    :param outcomes: the seed's outcome in each cell, keyed like ``design.cells``
    :return: effect name -> its estimate in this seed
    """
    levels = np.array(list(outcomes), dtype=bool)  # (2^k, k), True = on
    y = np.array(list(outcomes.values()), dtype=np.float64)
    z = np.where(levels, -1.0, 1.0)  # +1 where the switch is off: effects of removing a component
    n_cells = len(y)
    contrasts = {name: float(2.0 / n_cells * np.sum(y * z[:, i])) for i, name in enumerate(design.switches)}
    for (i, a), (j, b) in itertools.combinations(enumerate(design.switches), 2):
        contrasts[a + INTERACTION + b] = float(4.0 / n_cells * np.sum(y * z[:, i] * z[:, j]))
    return contrasts


def analyse(
    design: FactorialDesign,
    values: Mapping[str, Mapping[int, float]],
    alpha: float,
    margin: float,
    power: float = 0.8,
    min_n: int = 2,
) -> FactorialResult | None:
    """
    Estimate every main effect and two-way interaction of one outcome, with Holm's correction over them.

    :param design: the design
    :param values: variant name -> seed -> the run's outcome (finite values only count)
    :param alpha: the family-wise error rate
    :param margin: the equivalence margin (in the outcome's units)
    :param power: the power of the minimum detectable effect
    :param min_n: fewer complete seeds than this: no test (every effect ``unresolved``)
    :return: the result, or ``None`` when fewer than 2 seeds have a finished run in every cell
    """
    seeds_per_cell = [
        {seed for seed, value in values.get(variant, {}).items() if math.isfinite(value)} for variant in design.cells.values()
    ]
    complete = sorted(set.intersection(*seeds_per_cell))
    incomplete = sorted(set.union(*seeds_per_cell) - set(complete))
    if len(complete) < 2:
        return None
    per_seed = [
        seed_contrasts(design, {levels: values[variant][seed] for levels, variant in design.cells.items()})
        for seed in complete
    ]
    differences = {name: np.array([contrasts[name] for contrasts in per_seed]) for name in design.effects}
    cell_means = {
        levels: float(np.mean([values[variant][seed] for seed in complete])) for levels, variant in design.cells.items()
    }
    return FactorialResult(
        design=design,
        seeds=tuple(complete),
        incomplete_seeds=tuple(incomplete),
        comparisons=compare_family(differences, alpha, margin, power, min_n),
        cell_means=cell_means,
    )


def effect_label(name: str) -> str:
    """How an effect is named in the report: ``remove <switch>`` or ``<switch> x <switch>``."""
    return name if INTERACTION in name else f"remove {name}"


EXPLANATION = (
    "A factorial **main effect** of removing a component is the mean outcome of the runs without it minus the mean of "
    "the runs with it, averaged over every combination of the other varied switches; the leave-one-out effect removes "
    "the component from full TD3 only (every other switch on). The two agree only where the component does not "
    "interact with the others. An **interaction** A x B is the effect of removing A when B is off minus the effect of "
    "removing A when B is on (0 when the two act independently; symmetric in A and B). Each effect is computed within "
    "each seed (the runs of one seed share initial weights and evaluation episodes) and tested over the seeds with a "
    "one-sample t-test; Holm's correction runs over the family of all main effects and interactions of one outcome."
)


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:,.{digits}f}"


def _fmt_p(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.3g}"


def markdown_table(result: FactorialResult) -> list[str]:
    """The effects of one outcome as a markdown table (one row per effect)."""
    lines = [
        "| effect | estimate [95% t-interval] | p (t-test) | p (Holm) | verdict | MDE (80% power) | seeds needed |",
        "|---|---:|---:|---:|:---:|---:|---:|",
    ]
    for name, comparison in result.comparisons.items():
        ci = comparison.ci
        ci_text = f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci is not None else ""
        needed = comparison.seeds_needed
        lines.append(
            f"| {effect_label(name)} | {_fmt(comparison.effect)} {ci_text} | {_fmt_p(comparison.p_raw)} | "
            f"{_fmt_p(comparison.p_adjusted)} | {comparison.verdict} | {_fmt(comparison.mde)} | "
            f"{needed if needed is not None else '—'} |"
        )
    return lines


def summary_lines(result: FactorialResult, outcome: str) -> list[str]:
    """One generated sentence per effect whose verdict is not ``unresolved``, then the unresolved ones in one line."""
    n = len(result.seeds)
    lines = []
    unresolved = []
    for name, comparison in result.comparisons.items():
        ci = comparison.ci
        ci_text = f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci is not None else ""
        if comparison.verdict == "unresolved":
            unresolved.append(effect_label(name))
            continue
        lines.append(
            f"- {effect_label(name)}: **{comparison.verdict}** on {outcome}: {_fmt(comparison.effect)}{ci_text} "
            f"(t-test of the per-seed contrasts over {n} seeds, Holm-adjusted p {_fmt_p(comparison.p_adjusted)}, "
            f"margin ±{_fmt(comparison.margin)})."
        )
    if unresolved:
        lines.append(
            f"- unresolved on {outcome} ({n} seeds; see the table for the MDE and seeds needed): "
            + ", ".join(unresolved)
            + "."
        )
    return lines


def plot_interactions(result: FactorialResult, outcome: str, title: str, path: Path) -> None:
    """
    Interaction plots: for each pair (A, B), the mean outcome with A on and off, one line per level of B (averaged over
    the other switches). Parallel lines mean no interaction.

    :param result: the analysis of one outcome
    :param outcome: the outcome's label (y axis)
    :param title: the figure's title
    :param path: where to write the PNG
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sb3_ablation.study.render.figures import _save

    switches = result.design.switches
    pairs = list(itertools.combinations(range(len(switches)), 2))
    columns = min(3, len(pairs))
    rows = math.ceil(len(pairs) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    for ax, (i, j) in zip(axes.flat, pairs, strict=False):
        for level_b, style in ((True, "-o"), (False, "--s")):
            means = []
            for level_a in (True, False):
                cells = [mean for levels, mean in result.cell_means.items() if levels[i] == level_a and levels[j] == level_b]
                means.append(float(np.mean(cells)))
            ax.plot([0, 1], means, style, label=f"{switches[j]} {'on' if level_b else 'off'}")
        ax.set_xticks([0, 1], [f"{switches[i]}\non", "off"])
        ax.set_ylabel(outcome)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(pairs) :]:
        ax.set_visible(False)
    fig.suptitle(f"{title} ({len(result.seeds)} seeds)")
    fig.tight_layout()
    _save(fig, path)


def design_line(design: FactorialDesign, seeds: Sequence[int]) -> str:
    """One line naming the design and its blocks."""
    k = len(design.switches)
    return (
        f"Factorial design: 2^{k} = {2**k} variants over {', '.join(design.switches)} (the other switches on), "
        f"{len(seeds)} complete seeds: {len(seeds) * 2**k} runs."
    )


def factorial_sections(data: StudyData, envs: Sequence[EnvResult], plan: AnalysisPlan) -> list[Section]:
    """
    The report's factorial section of each env whose variants hold a full 2^k design (none for a leave-one-out study).

    :param data: the loaded study
    :param envs: the report model's per-env results (their outcomes and equivalence margins)
    :param plan: the analysis plan (alpha, power, outcomes)
    :return: one section per env with a design
    """
    sections = []
    for env_result in envs:
        env = env_result.env
        variants = [parse_variant(name) for name in data.runs.get(env, {})]
        design = find_design({v.name: v.switches for v in variants if not v.is_reference})
        if design is None:
            continue
        lines = [EXPLANATION, ""]
        figures: dict[str, Callable[[Path], None]] = {}
        json: dict[str, Any] = {"switches": list(design.switches), "outcomes": {}}
        for outcome in env_result.outcomes:
            key = outcome.outcome.key
            values = {}
            for variant in design.cells.values():
                seeds, xs = outcome_values(data, env, variant, key, plan)
                values[variant] = dict(zip(seeds.tolist(), xs.tolist(), strict=True))
            result = analyse(design, values, plan.alpha, outcome.margin.value, plan.power, MIN_RUNS)
            if result is None:
                lines += [f"**{outcome.outcome.name}**: fewer than 2 seeds with a run in every cell; no estimate.", ""]
                continue
            figure = f"{safe_name(env)}_factorial_{key}.png"
            figures[figure] = partial(plot_interactions, result, outcome.outcome.short, f"{env}: {outcome.outcome.short}")
            incomplete = f" (left out, incomplete: seeds {', '.join(map(str, result.incomplete_seeds))})"
            lines += [
                f"### {outcome.outcome.name}" + (" (primary)" if outcome.primary else ""),
                "",
                design_line(design, result.seeds) + (incomplete if result.incomplete_seeds else ""),
                f"Equivalence margin ±{_fmt(outcome.margin.value)} ({outcome.margin.how}); alpha {plan.alpha} family-wise.",
                "",
                *markdown_table(result),
                "",
                *summary_lines(result, outcome.outcome.name),
                "",
                f"![interaction plots](figures/{figure})",
                "",
            ]
            json["outcomes"][key] = {
                "seeds": list(result.seeds),
                "effects": {name: comparison_json(c) for name, c in result.comparisons.items()},
            }
        sections.append(Section(f"{env}: factorial analysis", lines, json, figures))
    return sections
