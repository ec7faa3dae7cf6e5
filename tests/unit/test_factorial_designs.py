"""Factorial designs and Yates effects against textbook values (Box, Hunter & Hunter 2005, ch. 5-6)."""

import itertools

import numpy as np
import pytest

from sb3_ablation.study.analyse.effects import per_seed_effects
from sb3_ablation.study.plan.designs import (
    alias_structure,
    effect_words,
    find_design,
    fractional_factorial,
    full_factorial,
    half_fraction,
    model_matrix,
    parse_design,
)
from sb3_ablation.study.plan.variants import canonical_name, resolve_variants
from sb3_ablation.switches import SWITCHES

THREE = ("target_networks", "target_policy_smoothing", "clipped_double_q")  # T, C, K of the pilot plant


def test_the_full_design_has_64_distinct_cells_and_a_subset_leaves_the_others_on():
    design = parse_design("factorial")
    assert len(design.cells) == 64 and len({tuple(cell.values()) for cell in design.cells}) == 64
    two = parse_design("factorial:target_networks,clipped_double_q")
    assert len(two.cells) == 4 and all(cell["replay_buffer"] and cell["deterministic_policy"] for cell in two.cells)
    assert next(v.name for v in resolve_variants("factorial:target_networks,clipped_double_q")) == "td3"


def test_the_half_fraction_has_32_cells_with_orthogonal_balanced_main_and_two_factor_columns():
    design = parse_design("fraction")
    assert len(design.cells) == 32 and design.defining_relation == ("ABCDEF",) and design.resolution == 6
    matrix = model_matrix(design.cells, design.factors, effect_words(6, 2))
    assert np.array_equal(matrix.T @ matrix, 32 * np.eye(21)) and np.all(matrix.sum(axis=0) == 0)
    # an even number of components removed in every cell (I = ABCDEF with + = on)
    assert all(sum(not cell[s] for s in SWITCHES) % 2 == 0 for cell in design.cells)


def test_alias_tables_match_the_textbook():
    half = alias_structure(half_fraction(SWITCHES))
    assert half["A"] == ("BCDEF",) and half["AB"] == ("CDEF",) and half["ABC"] == ("DEF",)
    quarter = fractional_factorial(SWITCHES, ["E=ABC", "F=BCD"])
    assert set(quarter.defining_relation) == {"ABCE", "BCDF", "ADEF"} and quarter.resolution == 4
    aliases = alias_structure(quarter)
    assert aliases["AB"] == ("CE", "ACDF", "BDEF") and aliases["A"] == ("BCE", "DEF", "ABCDF")
    assert alias_structure(full_factorial(THREE))["AB"] == ()


def test_yates_effects_of_the_pilot_plant_example():
    design = full_factorial(THREE)
    # standard order of (T, C, K) with T fastest: ---, +--, -+-, ++-, --+, +-+, -++, +++
    yields = {(False, False, False): 60, (True, False, False): 72, (False, True, False): 54, (True, True, False): 68,
              (False, False, True): 52, (True, False, True): 83, (False, True, True): 45, (True, True, True): 80}  # fmt: skip
    values = np.array([[yields[tuple(cell[s] for s in THREE)]] for cell in design.cells], dtype=float)
    words = effect_words(3, 3)
    effects = dict(zip(words, per_seed_effects(design, values, words)[:, 0], strict=True))
    expected = {"A": 23.0, "B": -5.0, "C": 1.5, "AB": 1.5, "AC": 10.0, "BC": 0.0, "ABC": 0.5}
    assert effects == pytest.approx(expected)


def test_a_pure_interaction_is_found_with_no_main_effects():
    design = full_factorial(SWITCHES)
    rng = np.random.default_rng(0)
    ab = model_matrix(design.cells, design.factors, ["AB"])[:, 0]
    values = 10 * ab[:, None] + rng.normal(0, 0.1, size=(64, 6))
    words = effect_words(6, 2)
    effects = dict(zip(words, per_seed_effects(design, values, words).mean(axis=1), strict=True))
    assert effects["AB"] == pytest.approx(20.0, abs=0.1)  # Yates: the interaction is the full +/- contrast
    assert all(abs(effects[w]) < 0.2 for w in words if w != "AB")


def test_aliased_effects_are_reported_with_their_aliases():
    design = fractional_factorial(THREE, ["C=AB"])
    assert len(design.cells) == 4 and alias_structure(design, 2)["A"] == ("BC",)
    # in this fraction the estimate of A is A + BC: a pure BC interaction shows up as A
    bc = model_matrix(design.cells, design.factors, ["BC"])[:, 0]
    assert per_seed_effects(design, bc[:, None] * 3.0, ["A"])[0, 0] == pytest.approx(6.0)


def test_the_design_of_a_studys_variants_is_found_back():
    for spec in ("factorial", "fraction", "factorial:target_networks,clipped_double_q",
                 "fraction:deterministic_policy,replay_buffer,target_networks,target_policy_smoothing,"
                 "delayed_policy_update,clipped_double_q/E=ABC,F=BCD"):  # fmt: skip
        design = parse_design(spec)
        found, cells = find_design({canonical_name(cell): cell for cell in design.cells})
        assert found == design and len(cells) == len(design.cells)
    assert find_design({v.name: v.switches for v in resolve_variants("leave-one-out")}) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fraction:target_netwrks,clipped_double_q", "unknown switch 'target_netwrks' (did you mean 'target_networks'?)"),
        ("fraction:target_networks,clipped_double_q,replay_buffer/G=AB", "bad generator 'G=AB'"),
        ("fraction:target_networks,clipped_double_q,replay_buffer/C=AC", "bad generator 'C=AC'"),
        ("factorial:target_networks", "expected at least two different switches"),
        ("factorial:target_networks,clipped_double_q/C=AB", "a full factorial takes no generators"),
    ],
)
def test_a_bad_design_is_one_line_naming_the_offending_token(spec, message):
    with pytest.raises(ValueError) as error:
        parse_design(spec)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_every_cell_of_a_design_is_a_valid_variant():
    for cell in itertools.islice(parse_design("fraction").cells, 32):
        assert resolve_variants(canonical_name(cell))[0].switches == cell
