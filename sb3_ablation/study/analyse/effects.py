"""Effects of a two-level design on the standard (Yates) scale, from per-cell, per-seed outcomes.

``values`` is an array ``(n_cells, n_seeds)`` aligned with ``design.cells`` (rows, standard order) and the seeds
(columns; a seed is a block: its runs share initial weights and evaluation episodes, so effects are taken within
each seed). A missing or failed run is NaN: a seed with any NaN cell is dropped from every per-seed quantity (its
other cells would unbalance the contrasts), and :class:`EffectEstimates` reports which seeds were dropped.

Sign conventions: level + is the component on, - removed. The effect of a word is the mean outcome of the cells where
its product column is + minus the mean where it is -; a main effect is what the component adds, averaged over the
other factors' levels. A two-factor interaction AB is half of (A's effect with B on minus A's effect with B off): 0
when the two act independently. In a fraction every estimate is the sum of the effects of its alias chain
(:func:`~sb3_ablation.study.plan.designs.alias_structure`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from sb3_ablation.common.suggestions import did_you_mean
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.plan.designs import Design, aliases, effect_words, model_matrix, multiply, word_name
from sb3_ablation.switches import SWITCHES


def _values(design: Design, values: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """``values`` as a float ``(n_cells, n_seeds)`` array (a 1-D array is one seed)."""
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] != len(design.signs):
        raise ValueError(
            f"values of shape {array.shape}; expected (n_cells, n_seeds) with n_cells = {len(design.signs)} "
            "(one row per cell of the design, in its standard order)"
        )
    return array


def complete_seeds(design: Design, values: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Which seeds (columns of ``values``) have a finite outcome in every cell: a boolean mask ``(n_seeds,)``."""
    complete: np.ndarray = np.all(np.isfinite(_values(design, values)), axis=0)
    return complete


def _estimable(design: Design, words: Sequence[str]) -> None:
    """A word in the defining relation has a constant column: no contrast, no effect."""
    relation = set(design.defining_relation)
    for word in words:
        if multiply(word) in relation:
            raise ValueError(
                f"effect {word!r} is in the design's defining relation (I = {' = '.join(design.defining_relation)}): "
                "its column is constant, so it cannot be estimated"
            )


def per_seed_effects(design: Design, values: np.ndarray | Sequence[Sequence[float]], words: Sequence[str]) -> np.ndarray:
    """
    The Yates effect of each word within each complete seed.

    :param design: the design
    :param values: ``(n_cells, n_seeds)``, rows in the order of ``design.cells``; NaN for a missing run
    :param words: effect words (``A``, ``AB``, ...)
    :return: ``(n_words, n_complete_seeds)``: per seed, the mean of the cells where the word's column is + minus the
        mean where it is -; the columns are the complete seeds (:func:`complete_seeds`) in input order
    """
    array = _values(design, values)
    _estimable(design, words)
    complete = array[:, np.all(np.isfinite(array), axis=0)]
    matrix = model_matrix(design, words)
    plus, minus = (matrix > 0).astype(float), (matrix < 0).astype(float)
    effects: np.ndarray = (plus.T @ complete) / plus.sum(axis=0)[:, None] - (minus.T @ complete) / minus.sum(axis=0)[:, None]
    return effects


@dataclass(frozen=True)
class EffectEstimates:
    """
    Effects averaged over the complete seeds.

    :param design: the design
    :param words: the estimated words, in the order asked
    :param estimates: word -> mean over the complete seeds of its per-seed effect (NaN without a complete seed)
    :param per_seed: ``(n_words, n_seeds)`` per-seed effects (:func:`per_seed_effects`)
    :param aliases: word -> the words it is confounded with (empty in a full design): the estimate is their sum
    :param grand_mean: the mean outcome over the design's cells and the complete seeds
    :param n_seeds: the number of complete seeds used
    :param dropped_seeds: the column indices of the seeds dropped for a missing cell
    """

    design: Design
    words: tuple[str, ...]
    estimates: Mapping[str, float]
    per_seed: np.ndarray
    aliases: Mapping[str, tuple[str, ...]]
    grand_mean: float
    n_seeds: int
    dropped_seeds: tuple[int, ...]

    def is_aliased(self, word: str) -> bool:
        """Whether the estimate of ``word`` is confounded with other effects."""
        return bool(self.aliases[word])

    def label(self, word: str) -> str:
        """``A`` in a full design, ``A + BCDEF`` in a fraction (what the estimate measures)."""
        return " + ".join((word, *self.aliases[word]))

    def name(self, word: str) -> str:
        """The switch names of ``word``."""
        return word_name(word, self.design.factors)


def effect_estimates(
    design: Design, values: np.ndarray | Sequence[Sequence[float]], words: Sequence[str] | None = None
) -> EffectEstimates:
    """
    Effects per word, the mean of the per-seed effects over the complete seeds, with the alias list of each.

    :param design: the design
    :param values: ``(n_cells, n_seeds)``, NaN for a missing run (that seed is dropped, see ``dropped_seeds``)
    :param words: effect words; default the main effects and two-factor interactions
    """
    array = _values(design, values)
    words = tuple(words if words is not None else effect_words(design.k, 2))
    complete = np.all(np.isfinite(array), axis=0)
    per_seed = per_seed_effects(design, array, words)
    n_seeds = int(complete.sum())
    # no complete seed: NaN estimates (and no warning from an empty mean); callers read n_seeds
    means = per_seed.mean(axis=1) if n_seeds else np.full(len(words), np.nan)
    grand = float(array[:, complete].mean()) if n_seeds else math.nan
    return EffectEstimates(
        design,
        words,
        dict(zip(words, means.tolist(), strict=True)),
        per_seed,
        {word: aliases(design, word) for word in words},
        grand,
        n_seeds,
        tuple(int(i) for i in np.flatnonzero(~complete)),
    )


def half_normal_points(estimates: EffectEstimates | Mapping[str, float]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """
    Daniel's half-normal plot: the sorted absolute effects against half-normal quantiles.

    :param estimates: word -> effect (non-finite ones are left out)
    :return: quantiles Φ^{-1}(0.5 + 0.5 (i - 0.5) / m) for i = 1..m, the absolute effects in increasing order, and
        their words; effects far above the line through the small ones are the real ones
    """
    effects = estimates.estimates if isinstance(estimates, EffectEstimates) else estimates
    finite = {word: abs(float(e)) for word, e in effects.items() if math.isfinite(e)}
    words = sorted(finite, key=lambda w: finite[w])  # stable: ties keep the given order
    m = len(words)
    normal = NormalDist()
    quantiles = np.array([normal.inv_cdf(0.5 + 0.5 * (i - 0.5) / m) for i in range(1, m + 1)])
    return quantiles, np.array([finite[w] for w in words]), words


def _factor(design: Design, name: str) -> int:
    """The index of a factor given by switch name or letter."""
    if name in design.factors:
        return design.factors.index(name)
    if len(name) == 1 and name in design.letters:
        return design.letters.index(name)
    hint = did_you_mean(name, design.factors)
    raise ValueError(f"{name!r} is not a factor of the design{hint}; expected one of {', '.join(design.factors)}")


def interaction_table(design: Design, values: np.ndarray | Sequence[Sequence[float]], a: str, b: str) -> np.ndarray:
    """
    The mean outcome at each combination of two components, averaged over the other factors and the complete seeds.

    :param a: a factor (switch name, or its letter)
    :param b: another factor
    :return: ``(2, 2)``: rows a on, a off; columns b on, b off (``[0, 0]`` both on, ``[1, 1]`` both removed); NaN
        without a complete seed
    """
    i, j = _factor(design, a), _factor(design, b)
    if i == j:
        raise ValueError(f"interaction_table: {a!r} and {b!r} are the same factor; expected two different ones")
    array = _values(design, values)
    complete = np.all(np.isfinite(array), axis=0)
    means = array[:, complete].mean(axis=1) if complete.any() else np.full(len(array), np.nan)
    signs = design.signs
    table = np.empty((2, 2))
    for r, on_a in enumerate((1, -1)):
        for c, on_b in enumerate((1, -1)):
            table[r, c] = means[(signs[:, i] == on_a) & (signs[:, j] == on_b)].mean()
    return table


@dataclass(frozen=True)
class PairSummary:
    """
    Two components together, on the cell-mean (Yates) scale, relative to both on.

    :param a: the first component; :param b: the second
    :param without_a: mean(a removed, b on) - mean(both on): what removing a alone changes (negative: it costs)
    :param without_b: mean(a on, b removed) - mean(both on)
    :param without_both: mean(both removed) - mean(both on)
    :param interaction: the Yates interaction, half of (both removed - a removed - b removed + none removed) on the
        means, i.e. ``(without_both - without_a - without_b) / 2``: 0 when the removals add up; negative when removing
        both costs more than the two removals apart (each covers for the other: substitutes); positive when it
        costs less (each needs the other to be of use: complements)
    :param means: the :func:`interaction_table` (rows a on/off, columns b on/off)
    :param word: the interaction's effect word (e.g. ``AB``), the key of its comparison
    """

    a: str
    b: str
    without_a: float
    without_b: float
    without_both: float
    interaction: float
    means: np.ndarray
    word: str = ""


def pair_summary(design: Design, values: np.ndarray | Sequence[Sequence[float]], a: str, b: str) -> PairSummary:
    """Removing ``a`` alone, ``b`` alone and both, relative to both on, and their interaction (see :class:`PairSummary`)."""
    table = interaction_table(design, values, a, b)
    both_on = table[0, 0]
    without_a, without_b, without_both = table[1, 0] - both_on, table[0, 1] - both_on, table[1, 1] - both_on
    return PairSummary(
        design.factors[_factor(design, a)],
        design.factors[_factor(design, b)],
        float(without_a),
        float(without_b),
        float(without_both),
        float((table[1, 1] - table[1, 0] - table[0, 1] + table[0, 0]) / 2),
        table,
        "".join(sorted((design.letters[_factor(design, a)], design.letters[_factor(design, b)]))),
    )


@dataclass(frozen=True)
class FittedCells:
    """
    A model's predictions for every cell of the full 2^k design over the design's factors.

    :param factors: the design's factors
    :param cells: the 2^k cells in standard order (all six switches each, those outside the design on)
    :param means: the predicted mean outcome of each cell
    :param in_design: whether each cell is one of the design's own cells
    """

    factors: tuple[str, ...]
    cells: tuple[dict[str, bool], ...]
    means: np.ndarray
    in_design: np.ndarray

    def predict(self, cell: Mapping[str, bool]) -> float:
        """The prediction for one cell (its levels of the factors)."""
        row = [all(c[f] == cell[f] for f in self.factors) for c in self.cells].index(True)
        return float(self.means[row])


def _aliased_pairs(design: Design, words: Sequence[str]) -> list[tuple[str, str]]:
    relation = set(design.defining_relation)
    return [(u, v) for u, v in itertools.combinations(words, 2) if multiply(u, v) in relation]


def fitted_cell_means(
    design: Design,
    estimates: EffectEstimates | Mapping[str, float],
    words: Sequence[str] | None = None,
    grand_mean: float | None = None,
) -> FittedCells:
    """
    The predictions of the model with the given words, grand mean + Σ effect / 2 · column, for all 2^k cells (also
    those not in a fraction; there an estimate stands for its whole alias chain, so the model assumes the other words
    of each chain are 0).

    :param design: the design the effects were estimated on
    :param estimates: :class:`EffectEstimates`, or word -> effect with ``grand_mean`` given
    :param words: the model's words; default all of ``estimates``
    :param grand_mean: the mean outcome (read from :class:`EffectEstimates` when not given)
    :raises ValueError: for two words aliased with each other (their estimates are one number)
    """
    effects = estimates.estimates if isinstance(estimates, EffectEstimates) else estimates
    if grand_mean is None:
        if not isinstance(estimates, EffectEstimates):
            raise ValueError("fitted_cell_means: grand_mean is needed with a mapping of effects")
        grand_mean = estimates.grand_mean
    words = list(words if words is not None else effects)
    missing = [w for w in words if w not in effects]
    if missing:
        raise ValueError(f"fitted_cell_means: no estimate for {missing[0]!r}; expected one of {', '.join(effects)}")
    pairs = _aliased_pairs(design, words)
    if pairs:
        u, v = pairs[0]
        raise ValueError(f"fitted_cell_means: {u} and {v} are aliased in this design ({u} = {v}); expected only one of them")
    full = Design(design.factors)
    matrix = model_matrix(full, words)
    means = grand_mean + matrix @ np.array([effects[w] for w in words], dtype=float) / 2
    in_design = np.array([design.index(cell) is not None for cell in full.cells])
    return FittedCells(design.factors, full.cells, means, in_design)


def model_words(design: Design) -> tuple[list[str], list[str]]:
    """
    The main effects and two-factor interactions a model on ``design`` can hold, and those it leaves out.

    A word aliased with an earlier one (conventional order: main effects first) is left out: its estimate is given to
    the earlier, lower-order word (effect hierarchy). None is left out at resolution V or more.
    """
    relation = set(design.defining_relation)
    kept: list[str] = []
    left_out: list[str] = []
    for word in effect_words(design.k, 2):
        (left_out if any(multiply(word, k) in relation for k in kept) else kept).append(word)
    return kept, left_out


@dataclass(frozen=True)
class SufficientSet:
    """
    The smallest set of components to keep (removing all the design's others together) within the margin.

    :param keep: the design's factors kept (switches outside the design stay on too)
    :param removed: the design's factors removed
    :param switches: the cell: all six switches
    :param predicted_mean: the model's prediction for that cell
    :param predicted_drop: the prediction with all components on minus this one (positive: a loss)
    :param in_design: whether the cell is one of the design's own cells
    :param observed_mean: its mean over the complete seeds, where ``in_design`` (else ``None``)
    :param observed_drop: observed all-on mean minus ``observed_mean``, where both cells are in the design
    :param model_words: the words of the fitted model
    :param left_out_words: two-factor interactions aliased with a model word (see :func:`model_words`)
    :param observed_within_margin: whether ``observed_drop`` is within the margin too, a point estimate (``None``: the
        cell was not run)
    :param confirmed: whether the cell passes the equivalence test against all components on at its family's level,
        without failed runs in either arm (:func:`confirm_sufficient`; ``False`` until tested, ``None``: the cell was
        not run)
    :param observed_keep: the smallest set found on the design's own cells alone: the fewest factors kept in a cell
        whose observed drop is within the margin (``None`` when the all-on cell was not run)
    :param observed_keep_switches: that cell: all six switches
    :param observed_keep_drop: that cell's observed drop
    :param confirmation: the cell's comparison with all components on, the test behind ``confirmed`` (``None``: none)
    :param confirmation_reason: why the set is not confirmed ("" where it is, or the cell was not run)
    """

    keep: tuple[str, ...]
    removed: tuple[str, ...]
    switches: dict[str, bool]
    predicted_mean: float
    predicted_drop: float
    in_design: bool
    observed_mean: float | None
    observed_drop: float | None
    model_words: tuple[str, ...]
    left_out_words: tuple[str, ...]
    observed_within_margin: bool | None
    observed_keep: tuple[str, ...] | None
    observed_keep_switches: dict[str, bool] | None
    observed_keep_drop: float | None
    confirmed: bool | None = None
    confirmation: Comparison | None = None
    confirmation_reason: str = ""


def _within_margin(drop: float, margin: float, scale: float) -> bool:
    """``drop <= margin``, with a tiny tolerance so that a drop equal to the margin counts as within it despite
    rounding (``scale``: the all-on value the drop is taken from)."""
    return drop <= margin + 1e-12 * max(1.0, abs(scale))


def smallest_sufficient_set(
    design: Design,
    values: np.ndarray | Sequence[Sequence[float]],
    margin: float,
    words: Sequence[str] | None = None,
) -> SufficientSet:
    """
    The smallest set of components to KEEP such that removing all the others together lowers the predicted return
    by at most ``margin`` compared with all components on.

    Predictions come from the fitted model (grand mean + main effects + two-factor interactions by default, see
    :func:`model_words`), for every cell of the full 2^k design, so the chosen cell need not be one the design ran.
    Among the sets of the smallest size within the margin, the one with the highest predicted return wins (then the
    first in ``SWITCHES`` order). The outcome is a return: higher is better.

    The model's choice is then described on the design's own cells: ``observed_within_margin`` where its cell was run,
    and ``observed_keep`` is the answer of the observed cell means alone (the fewest factors kept within the margin,
    ties to the higher mean), so a model that misfits a cell cannot hide it. Both are point estimates: the set is
    ``confirmed`` only by a test of its cell against all components on (:func:`confirm_sufficient`); until then it is
    not (``False``; ``None`` where its cell was not run).

    :param design: the design
    :param values: ``(n_cells, n_seeds)``, NaN for a missing run (that seed is dropped)
    :param margin: the largest acceptable predicted drop (>= 0, on the outcome's scale)
    :param words: the model's words (default: :func:`model_words`)
    :raises ValueError: for a negative or non-finite margin, or without a complete seed
    """
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"smallest_sufficient_set: margin {margin!r}; expected a finite number >= 0")
    left_out: list[str] = []
    if words is None:
        words, left_out = model_words(design)
    estimates = effect_estimates(design, values, words)
    if estimates.n_seeds == 0:
        raise ValueError("smallest_sufficient_set: no seed has an outcome in every cell of the design")
    fitted = fitted_cell_means(design, estimates)
    every_on = dict.fromkeys(SWITCHES, True)
    full_prediction = fitted.predict(every_on)
    best: tuple[float, tuple[str, ...], dict[str, bool]] | None = None
    for size in range(design.k + 1):
        for keep in itertools.combinations(design.factors, size):
            cell = {**every_on, **{f: f in keep for f in design.factors}}
            prediction = fitted.predict(cell)
            if _within_margin(full_prediction - prediction, margin, full_prediction) and (
                best is None or prediction > best[0]
            ):
                best = (prediction, keep, cell)
        if best is not None:
            break
    assert best is not None  # keeping every component drops 0 <= margin
    prediction, keep, cell = best
    array = _values(design, values)
    observed = array[:, np.all(np.isfinite(array), axis=0)].mean(axis=1)
    row, full_row = design.index(cell), design.index(every_on)
    observed_mean = float(observed[row]) if row is not None else None
    observed_drop: float | None = None
    within: bool | None = None
    observed_keep: tuple[str, ...] | None = None
    observed_cell: dict[str, bool] | None = None
    observed_keep_drop: float | None = None
    if full_row is not None:
        drops = [float(observed[full_row] - mean) for mean in observed]
        if row is not None:
            observed_drop = drops[row]
            within = _within_margin(observed_drop, margin, float(observed[full_row]))
        # the design's own answer: the fewest factors kept within the margin, ties to the higher observed mean
        _, _, best_row = min(
            (sum(run[f] for f in design.factors), drop, index)
            for index, (run, drop) in enumerate(zip(design.cells, drops, strict=True))
            if _within_margin(drop, margin, float(observed[full_row]))
        )
        observed_cell, observed_keep_drop = design.cells[best_row], drops[best_row]
        observed_keep = tuple(f for f in design.factors if observed_cell[f])
    return SufficientSet(
        tuple(keep),
        tuple(f for f in design.factors if f not in keep),
        cell,
        prediction,
        full_prediction - prediction,
        row is not None,
        observed_mean,
        observed_drop,
        tuple(words),
        tuple(left_out),
        within,
        observed_keep,
        observed_cell,
        observed_keep_drop,
        confirmed=None if row is None else False,
        confirmation_reason="" if row is None else "not tested against all components on",
    )


def confirm_sufficient(
    sufficient: SufficientSet, comparison: Comparison | None, failed: tuple[int, int] = (0, 0)
) -> SufficientSet:
    """
    The smallest sufficient set confirmed, or not, by a test: ``confirmed`` only when its own cell passes the
    equivalence test against all components on at the level of the family the comparison belongs to (its adjusted
    p not equivalent at most the family's alpha, e.g. the per-cell comparisons with TD3), and neither arm has failed
    runs, which a test of the return cannot see as such. An observed drop within the margin is a point estimate: it
    confirms nothing.

    :param sufficient: :func:`smallest_sufficient_set`
    :param comparison: its cell against the all-on cell (``None``: no such comparison)
    :param failed: failed runs of ``(the cell, the all-on cell)``
    :return: the set with ``confirmed``, ``confirmation`` and ``confirmation_reason`` set (unchanged where the cell
        was not run)
    """
    if not sufficient.in_design:
        return sufficient
    reason = ""
    if comparison is None:
        reason = "no comparison of its cell with all components on"
    elif not math.isfinite(comparison.p_equivalence_adjusted):
        reason = "no equivalence test (" + (comparison.reason or "no margin") + ")"
    elif comparison.p_equivalence_adjusted > comparison.alpha:
        reason = (
            f"equivalence not shown at the family's level: p not equivalent {comparison.p_equivalence:.2g}, adjusted "
            f"over its family of {comparison.family_size} comparisons {comparison.p_equivalence_adjusted:.2g} > "
            f"{comparison.alpha:g}"
        )
    elif any(failed):
        reason = f"failures in an arm ({failed[0]} of its runs, {failed[1]} with all components on)"
    return dataclasses.replace(sufficient, confirmed=not reason, confirmation=comparison, confirmation_reason=reason)
