"""Design algebra (plan/designs.py) and Yates effects (analyse/effects.py) against textbook values and known truths;
a study's variants as a design and back (plan/variants.py).

Textbook: Box, Hunter & Hunter (2005), Statistics for Experimenters, 2nd ed., ch. 5 (the pilot-plant 2^3, Table 5.2)
and ch. 6 (alias structures of fractions).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from sb3_ablation.study.analyse.effects import (
    effect_estimates,
    fitted_cell_means,
    half_normal_points,
    interaction_table,
    pair_summary,
    per_seed_effects,
    smallest_sufficient_set,
)
from sb3_ablation.study.plan.designs import (
    Design,
    alias_structure,
    effect_words,
    find_design,
    fractional_factorial,
    full_factorial,
    half_fraction,
    model_matrix,
    parse_design,
    word_name,
)
from sb3_ablation.study.plan.variants import canonical_name, resolve_variants
from sb3_ablation.switches import SWITCHES

# the pilot plant's temperature T, concentration C and catalyst K as factors A, B, C
THREE = ("target_networks", "target_policy_smoothing", "clipped_double_q")
FOUR = SWITCHES[:4]
FIVE = SWITCHES[:5]


def test_the_full_design_has_64_distinct_cells_in_standard_order():
    design = parse_design("factorial")
    assert design.factors == SWITCHES and design.generators == () and design.resolution is None
    assert len(design.cells) == 64 and len({tuple(cell.values()) for cell in design.cells}) == 64
    # Yates order: everything removed first, then A alone on, then B alone on, then both
    first, second, third = design.cells[:3]
    assert not any(first.values()) and all(design.cells[-1].values())
    assert second == {s: s == SWITCHES[0] for s in SWITCHES} and third == {s: s == SWITCHES[1] for s in SWITCHES}


def test_a_design_over_two_switches_leaves_the_others_on():
    design = parse_design("factorial:clipped_double_q,target_networks")
    assert design.factors == ("target_networks", "clipped_double_q")  # SWITCHES order whatever the spec's
    assert len(design.cells) == 4
    assert all(cell[s] for cell in design.cells for s in SWITCHES if s not in design.factors)
    assert [(c["target_networks"], c["clipped_double_q"]) for c in design.cells] == [
        (False, False),
        (True, False),
        (False, True),
        (True, True),
    ]
    assert parse_design("leave-one-out") is None and parse_design("td3") is None
    # the all-on cell comes first among the variants a design resolves to: the baseline
    assert next(v.name for v in resolve_variants("factorial:target_networks,clipped_double_q")) == "td3"


def test_the_half_fraction_of_six_has_orthogonal_balanced_main_and_two_factor_columns():
    design = parse_design("fraction")
    assert design == half_fraction(SWITCHES) and design.generators == ("F=ABCDE",)
    assert len(design.cells) == 32 and design.defining_relation == ("ABCDEF",) and design.resolution == 6
    words = effect_words(6, 2)
    assert len(words) == 21
    matrix = model_matrix(design, words)
    assert np.array_equal(matrix.T @ matrix, 32 * np.eye(21))  # every pair of columns orthogonal
    assert np.all(matrix.sum(axis=0) == 0)  # every column balanced: 16 cells at +, 16 at -
    # I = ABCDEF with + = on: an even number of components removed in every cell, full TD3 among them
    assert all(sum(not cell[s] for s in SWITCHES) % 2 == 0 for cell in design.cells)
    assert design.index(dict.fromkeys(SWITCHES, True)) is not None


def test_the_alias_table_of_the_half_fraction_matches_the_textbook():
    aliases = alias_structure(half_fraction(SWITCHES))
    assert aliases["A"] == ("BCDEF",) and aliases["F"] == ("ABCDE",)
    assert aliases["AB"] == ("CDEF",) and aliases["EF"] == ("ABCD",)
    assert aliases["ABC"] == ("DEF",) and aliases["ABF"] == ("CDE",)
    assert len(aliases) == 6 + 15 + 20
    assert all(len(alias) == 6 - len(word) for word, chain in aliases.items() for alias in chain)
    assert all(chain == () for chain in alias_structure(full_factorial(SWITCHES)).values())
    assert alias_structure(full_factorial(THREE))["AB"] == ()


def test_the_alias_table_of_the_quarter_fraction_matches_the_textbook():
    quarter = parse_design("fraction:" + ",".join(SWITCHES) + "/E=ABC,F=BCD")
    assert quarter == fractional_factorial(SWITCHES, ["E=ABC", "F=BCD"]) == parse_design("fraction:/E=ABC;F=BCD")
    assert len(quarter.cells) == 16 and quarter.resolution == 4
    assert quarter.defining_relation == ("ABCE", "ADEF", "BCDF")
    aliases = alias_structure(quarter)
    # the 2^(6-2)_IV of Box, Hunter & Hunter: main effects clear of two-factor interactions, those aliased in chains
    assert aliases["A"] == ("BCE", "DEF", "ABCDF")
    assert aliases["E"] == ("ABC", "ADF", "BCDEF")
    assert aliases["AB"] == ("CE", "ACDF", "BDEF")
    assert aliases["AD"] == ("EF", "ABCF", "BCDE")
    assert aliases["AE"] == ("BC", "DF", "ABCDEF")
    assert aliases["BD"] == ("CF", "ABEF", "ACDE")
    assert describe_resolution(quarter) == "IV"


def describe_resolution(design: Design) -> str:
    return design.describe().rsplit("resolution ", 1)[1].rstrip(")")


def test_generators_are_canonical_and_the_design_survives_json():
    # A=BCD is the same fraction as D=ABC (I = ABCD): one spelling
    assert fractional_factorial(FOUR, ["A=BCD"]) == fractional_factorial(FOUR, ["D=ABC"]) == half_fraction(FOUR)
    for design in (parse_design("fraction"), parse_design("fraction:/E=ABC,F=BCD"), full_factorial(THREE)):
        back = Design.from_dict(json.loads(json.dumps(design.to_dict())))
        assert back == design and back.cells == design.cells
    with pytest.raises(ValueError, match="does not follow from generators"):
        Design.from_dict({"factors": list(FOUR), "generators": ["D=ABC"], "defining_relation": ["ABC"]})


def test_the_design_of_a_studys_variants_is_found_back():
    for spec in ("factorial", "fraction", "factorial:target_networks,clipped_double_q",
                 "fraction:deterministic_policy,replay_buffer,target_networks,target_policy_smoothing,"
                 "delayed_policy_update,clipped_double_q/E=ABC,F=BCD"):  # fmt: skip
        design = parse_design(spec)
        found, cells = find_design({canonical_name(cell): cell for cell in design.cells})
        assert found == design and len(cells) == len(design.cells)
    assert find_design({v.name: v.switches for v in resolve_variants("leave-one-out")}) is None


def test_every_cell_of_a_design_is_a_valid_variant():
    for cell in itertools.islice(parse_design("fraction").cells, 32):
        assert resolve_variants(canonical_name(cell))[0].switches == cell


def test_word_names_use_the_switches():
    design = parse_design("factorial:target_networks,clipped_double_q")
    assert word_name("AB", design.factors) == "target_networks x clipped_double_q"
    assert effect_words(3, 3) == ["A", "B", "C", "AB", "AC", "BC", "ABC"]


PILOT_PLANT = {  # (T, C, K) -> yield, Table 5.2
    (False, False, False): 60,
    (True, False, False): 72,
    (False, True, False): 54,
    (True, True, False): 68,
    (False, False, True): 52,
    (True, False, True): 83,
    (False, True, True): 45,
    (True, True, True): 80,
}


def test_yates_effects_of_the_pilot_plant_example():
    design = full_factorial(THREE)
    values = np.array([[PILOT_PLANT[tuple(cell[s] for s in THREE)]] for cell in design.cells], dtype=float)
    assert values[:, 0].tolist() == [60, 72, 54, 68, 52, 83, 45, 80]  # the design's rows are the standard order
    words = effect_words(3, 3)
    effects = dict(zip(words, per_seed_effects(design, values, words)[:, 0], strict=True))
    assert effects == pytest.approx({"A": 23.0, "B": -5.0, "C": 1.5, "AB": 1.5, "AC": 10.0, "BC": 0.0, "ABC": 0.5})
    estimates = effect_estimates(design, values, words)
    assert estimates.grand_mean == pytest.approx(64.25) and not estimates.is_aliased("AC")
    # the full model reproduces every cell
    fitted = fitted_cell_means(design, estimates)
    assert fitted.means == pytest.approx(values[:, 0]) and fitted.in_design.all()
    # TK: the temperature effect is 10 larger (x2 / 2) with catalyst K+ than K-
    table = interaction_table(design, values, "target_networks", "C")
    assert table == pytest.approx(np.array([[(83 + 80) / 2, (72 + 68) / 2], [(52 + 45) / 2, (60 + 54) / 2]]))
    pair = pair_summary(design, values, "A", "clipped_double_q")
    assert pair.interaction == pytest.approx(10.0) and pair.without_a == pytest.approx(48.5 - 81.5)


def test_a_pure_interaction_is_found_with_no_main_effects():
    design = full_factorial(SWITCHES)
    rng = np.random.default_rng(0)
    levels = np.array([[1 if cell[s] else -1 for s in SWITCHES] for cell in design.cells])
    values = 10.0 * (levels[:, 0] * levels[:, 1])[:, None] + rng.normal(0, 0.1, size=(64, 5))  # 5 seeds
    estimates = effect_estimates(design, values)
    assert estimates.per_seed.shape == (21, 5) and estimates.n_seeds == 5 and estimates.dropped_seeds == ()
    assert estimates.estimates["AB"] == pytest.approx(20.0, abs=0.1)  # +10 vs -10: the full contrast
    assert all(abs(e) < 0.2 for w, e in estimates.estimates.items() if w != "AB")
    pair = pair_summary(design, values, SWITCHES[0], SWITCHES[1])
    # removing either alone costs 20, removing both costs nothing: each needs the other (complements)
    assert (pair.without_a, pair.without_b, pair.without_both) == pytest.approx((-20, -20, 0), abs=0.1)
    assert pair.interaction == pytest.approx(estimates.estimates["AB"])
    _, effects, words = half_normal_points(estimates)
    assert words[-1] == "AB" and effects[-1] / effects[-2] > 50


def test_aliased_effects_are_reported_with_their_aliases():
    design = fractional_factorial(THREE, ["C=AB"])
    assert len(design.cells) == 4 and design.resolution == 3 and alias_structure(design, 2)["A"] == ("BC",)
    # a pure B x C interaction: in this fraction it shows up as A
    levels = np.array([[1 if cell[s] else -1 for s in THREE] for cell in design.cells])
    values = 3.0 * (levels[:, 1] * levels[:, 2])[:, None] + np.zeros((4, 3))
    estimates = effect_estimates(design, values, ["A", "B", "C"])
    assert estimates.estimates["A"] == pytest.approx(6.0) and estimates.estimates["B"] == pytest.approx(0.0)
    assert estimates.is_aliased("A") and estimates.aliases["A"] == ("BC",) and estimates.label("A") == "A + BC"
    with pytest.raises(ValueError, match="defining relation"):
        effect_estimates(design, values, ["ABC"])
    with pytest.raises(ValueError, match="A and BC are aliased"):
        fitted_cell_means(design, {"A": 1.0, "BC": 1.0}, grand_mean=0.0)


def test_a_seed_missing_a_cell_is_dropped_and_counted():
    design = full_factorial(THREE)
    values = np.tile(np.array([60, 72, 54, 68, 52, 83, 45, 80], dtype=float)[:, None], (1, 4))
    values[5, 2] = np.nan  # seed 2's run of cell +-+ failed
    assert per_seed_effects(design, values, ["A", "AC"]).shape == (2, 3)
    estimates = effect_estimates(design, values)
    assert estimates.n_seeds == 3 and estimates.dropped_seeds == (2,)
    assert estimates.estimates["A"] == pytest.approx(23.0)
    with pytest.raises(ValueError, match="expected \\(n_cells, n_seeds\\)"):
        effect_estimates(design, values[:7])


def test_half_normal_quantiles():
    quantiles, effects, words = half_normal_points({"A": -3.0, "B": 1.0, "AB": 2.0, "C": float("nan")})
    assert words == ["B", "AB", "A"] and effects.tolist() == [1.0, 2.0, 3.0]
    # Φ^{-1}(0.5 + 0.5 (i - 0.5) / 3): the median of |Z| is Φ^{-1}(0.75)
    assert quantiles == pytest.approx([0.2104284, 0.6744898, 1.3829941], abs=1e-6)


def sufficiency_truth(cell: dict[str, bool]) -> float:
    """A known return: A is essential; B and C cover for each other (C slightly better); D costs 1; E nothing."""
    a, b, c, d = (cell[s] for s in SWITCHES[:4])
    return 100.0 - 40 * (not a) - 30 * (not b and not c) - 2 * (not c) - 1 * (not d)


@pytest.mark.parametrize("spec", ["factorial:" + ",".join(FOUR), "fraction:" + ",".join(FIVE)])
def test_the_smallest_sufficient_set_of_a_known_truth(spec):
    design = parse_design(spec)
    rng = np.random.default_rng(1)
    values = np.array([[sufficiency_truth(cell)] * 4 for cell in design.cells]) + rng.normal(0, 0.01, (len(design.cells), 4))
    result = smallest_sufficient_set(design, values, margin=5.0)
    # {A, B} and {A, C} both fit within 5; {A, C} loses less (1 for D, against 2 + 1): the higher return wins
    assert result.keep == (SWITCHES[0], SWITCHES[2]) and result.predicted_drop == pytest.approx(1.0, abs=0.05)
    assert result.left_out_words == ()  # the model (main effects + two-factor interactions) is exact here
    if design.generators:
        # I = ABCDE: the cell A+ B- C+ D- E- has an odd number of removals, so the fraction never ran it
        assert not result.in_design and result.observed_mean is None and result.observed_drop is None
        assert result.confirmed is None
        # the fraction's own cells: keeping A, C and D (B and E removed: an even number) loses nothing
        assert result.observed_keep == (SWITCHES[0], SWITCHES[2], SWITCHES[3])
        assert result.observed_keep_drop == pytest.approx(0.0, abs=0.05)
    else:
        assert result.in_design and result.observed_mean == pytest.approx(99.0, abs=0.05)
        assert result.observed_drop == pytest.approx(1.0, abs=0.05) and result.observed_within_margin is True
        assert result.confirmed is False  # a point estimate within the margin confirms nothing: only a test does
        assert result.observed_keep == result.keep and result.observed_keep_switches == result.switches
    # a tight margin keeps everything that costs anything; a huge one keeps nothing
    assert smallest_sufficient_set(design, values, margin=0.5).keep == (SWITCHES[0], SWITCHES[2], SWITCHES[3])
    assert smallest_sufficient_set(design, values, margin=1000.0).keep == ()
    with pytest.raises(ValueError, match="expected a finite number >= 0"):
        smallest_sufficient_set(design, values, margin=-1.0)


def test_a_model_choice_the_cells_refute_is_not_confirmed():
    # a pure three-factor interaction (and a small main effect of A): the model of main effects and two-factor
    # interactions predicts that removing everything costs 2, but the all-off cell loses 22
    design = parse_design("factorial:" + ",".join(SWITCHES[:3]))
    rng = np.random.default_rng(0)
    truth = 100 + 10 * design.signs.prod(axis=1) + design.signs[:, 0]
    values = truth[:, None] + rng.normal(0, 0.01, (len(design.cells), 3))
    result = smallest_sufficient_set(design, values, margin=5.0)
    assert result.keep == () and result.predicted_drop == pytest.approx(2.0, abs=0.05)
    assert result.observed_drop == pytest.approx(22.0, abs=0.05) and result.observed_within_margin is False
    assert result.confirmed is False
    # the cells alone: keeping A only (B and C removed: the interaction's sign is +) loses nothing
    assert result.observed_keep == (SWITCHES[0],) and result.observed_keep_drop == pytest.approx(0.0, abs=0.05)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "fraction:target_netwrks,clipped_double_q,replay_buffer",
            "unknown switch 'target_netwrks' (did you mean 'target_networks'?)",
        ),
        # the unknown switch is named before the count of switches is checked
        ("fraction:target_netwrks,clipped_double_q", "unknown switch 'target_netwrks' (did you mean 'target_networks'?)"),
        ("factorial:target_networks,target_networks", "switch 'target_networks' named twice"),
        ("factorial:target_networks", "expected at least two different switches"),
        ("factorial:target_networks,clipped_double_q/C=AB", "a full factorial takes no generators"),
        ("factoral:target_networks,clipped_double_q", "unknown design 'factoral' (did you mean 'factorial'?)"),
        ("fraction:target_networks,clipped_double_q", "expected at least three switches"),
        ("fraction:target_networks,clipped_double_q,replay_buffer/G=AB", "bad generator 'G=AB': G not among"),
        ("fraction:target_networks,clipped_double_q,replay_buffer/C=AC", "bad generator 'C=AC': C on both sides"),
        ("fraction:target_networks,clipped_double_q,replay_buffer/C+AB", "bad generator 'C+AB'; expected LETTER=WORD"),
        ("fraction:/E=ABC,F=BCE", "bad generator 'F=BCE': E is itself generated"),
        ("fraction:/E=ABC,E=ABD", "bad generator 'E=ABC': E is generated twice"),
        ("fraction:target_networks,clipped_double_q,replay_buffer/C=A", "resolution II"),
        ("fraction:target_networks,clipped_double_q,replay_buffer/", "no generator after '/'"),
    ],
)
def test_a_bad_design_is_one_line_naming_the_offending_token(spec, message):
    with pytest.raises(ValueError) as error:
        parse_design(spec)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_bad_factor_or_word_is_one_line():
    design = full_factorial(THREE)
    values = np.zeros((8, 2))
    with pytest.raises(ValueError, match=r"'target_network' is not a factor .*did you mean 'target_networks'"):
        interaction_table(design, values, "target_network", "B")
    with pytest.raises(ValueError, match="bad effect word 'AD'"):
        model_matrix(design, ["AD"])
