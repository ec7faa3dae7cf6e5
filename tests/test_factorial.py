"""The factorial preset and the factorial analysis: designs found among variants, effects from known truths."""

import itertools

import numpy as np
import pytest

from sb3_ablation.study.plan.variants import resolve_variants
from sb3_ablation.study.render.factorial import INTERACTION, analyse, find_design, plot_interactions, seed_contrasts

FOUR = ("target_networks", "target_policy_smoothing", "delayed_policy_update", "clipped_double_q")


def _switches(variants):
    return {variant.name: variant.switches for variant in variants}


def test_factorial_preset_is_the_full_design_over_the_named_switches_with_the_others_on():
    variants = resolve_variants("factorial:" + ",".join(FOUR))
    assert len(variants) == 16
    assert variants[0].name == "td3"
    assert {tuple(v.switches[s] for s in FOUR) for v in variants} == set(itertools.product((True, False), repeat=4))
    assert all(v.switches["replay_buffer"] and v.switches["deterministic_policy"] for v in variants)
    # commas elsewhere still separate variant names
    names = [v.name for v in resolve_variants("td3,no_replay_buffer factorial:target_networks,clipped_double_q")]
    assert names == [
        "td3",
        "no_replay_buffer",
        "no_clipped_double_q",
        "no_target_networks",
        "no_target_networks+no_clipped_double_q",
    ]


@pytest.mark.parametrize(
    ("preset", "message"),
    [
        ("factorial:target_netwrks,clipped_double_q", "did you mean 'target_networks'"),
        ("factorial:clipped_double_q", "at least two different switches"),
        ("factorial:clipped_double_q,clipped_double_q", "at least two different switches"),
    ],
)
def test_factorial_preset_refuses_bad_switch_lists_in_one_line(preset, message):
    with pytest.raises(ValueError, match=message) as error:
        resolve_variants(preset)
    assert "\n" not in str(error.value)


def test_design_is_found_in_a_factorial_study_and_not_in_leave_one_out():
    design = find_design(_switches(resolve_variants(["leave-one-out", "factorial:target_networks,clipped_double_q"])))
    assert design is not None and design.switches == ("target_networks", "clipped_double_q")
    assert len(design.cells) == 4
    assert find_design(_switches(resolve_variants("leave-one-out"))) is None
    assert find_design(_switches(resolve_variants("factorial"))).switches == tuple(resolve_variants("td3")[0].switches)


def _truth(levels: dict[str, bool], seed: int) -> float:
    """y = 10 + 5 [A off] - 3 [B off] + 4 [A off][B off] + a seed effect, C without effect (exact in binary)."""
    a_off, b_off = not levels["target_networks"], not levels["delayed_policy_update"]
    return 10.0 + 5.0 * a_off - 3.0 * b_off + 4.0 * (a_off and b_off) + 0.25 * seed


def test_effects_of_a_known_linear_truth_are_recovered_exactly():
    switches = ("target_networks", "delayed_policy_update", "clipped_double_q")
    design = find_design(_switches(resolve_variants("factorial:" + ",".join(switches))))
    assert design.switches == switches  # SWITCHES order
    outcomes = {levels: _truth(dict(zip(switches, levels, strict=True)), seed=3) for levels in design.cells}
    contrasts = seed_contrasts(design, outcomes)
    # removing A: 5 on average plus half the interaction; removing B: -3 + 4/2
    assert contrasts["target_networks"] == 7.0
    assert contrasts["delayed_policy_update"] == -1.0
    assert contrasts["clipped_double_q"] == 0.0
    assert contrasts["target_networks" + INTERACTION + "delayed_policy_update"] == 4.0
    assert contrasts["target_networks" + INTERACTION + "clipped_double_q"] == 0.0


def test_analysis_gives_verdicts_over_seeds_with_holm_over_the_family(tmp_path):
    switches = ("target_networks", "delayed_policy_update", "clipped_double_q")
    design = find_design(_switches(resolve_variants("factorial:" + ",".join(switches))))
    rng = np.random.default_rng(0)
    values = {
        variant: {
            seed: _truth(dict(zip(switches, levels, strict=True)), seed) + float(rng.normal(0, 0.5)) for seed in range(8)
        }
        for levels, variant in design.cells.items()
    }
    values["td3"].pop(7)  # seed 7 is incomplete: left out of every effect
    result = analyse(design, values, alpha=0.05, margin=1.5)
    assert result.seeds == tuple(range(7)) and result.incomplete_seeds == (7,)
    assert len(result.comparisons) == 3 + 3
    main_a = result.comparisons["target_networks"]
    assert main_a.verdict == "differs" and main_a.ci[0] < 7.0 < main_a.ci[1]
    assert result.comparisons["target_networks" + INTERACTION + "delayed_policy_update"].verdict == "differs"
    # Holm: the adjusted p is never below the raw p
    assert all(c.p_adjusted >= c.p_raw for c in result.comparisons.values())
    path = tmp_path / "interactions.png"
    plot_interactions(result, "final return", "synthetic", path)
    assert path.stat().st_size > 0


def test_analysis_needs_two_complete_seeds():
    design = find_design(_switches(resolve_variants("factorial:target_networks,clipped_double_q")))
    values = {variant: {0: 1.0} for variant in design.cells.values()}
    assert analyse(design, values, alpha=0.05, margin=1.0) is None
