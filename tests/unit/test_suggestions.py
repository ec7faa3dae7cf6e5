"""The one did-you-mean helper (sb3_ablation/common/suggestions.py): its two forms, case, and the one module that
uses difflib."""

import ast
from pathlib import Path

import sb3_ablation
from sb3_ablation.common.suggestions import closest_name, did_you_mean, quoted_with_suggestion


def test_the_closest_valid_name_in_each_form():
    switches = ["clipped_double_q", "delayed_policy_updates", "target_policy_smoothing"]
    assert closest_name("clipped_double", switches) == "clipped_double_q"
    assert did_you_mean("clipped_double", switches) == " (did you mean 'clipped_double_q'?)"
    assert did_you_mean("clipped_double", switches, separator="; ") == "; did you mean 'clipped_double_q'?"
    assert quoted_with_suggestion("clipped_double", switches) == "'clipped_double' (did you mean 'clipped_double_q'?)"


def test_nothing_close_gives_no_suggestion():
    assert closest_name("zzz", ["clipped_double_q"]) is None
    assert did_you_mean("zzz", ["clipped_double_q"], separator="; ") == ""
    assert quoted_with_suggestion("zzz", ["clipped_double_q"]) == "'zzz'"


def test_case_ignored_on_request_and_the_candidate_keeps_its_case():
    envs = ["Pendulum-v1", "Hopper-v5"]
    assert closest_name("PENDULUM-V1", envs) is None
    assert quoted_with_suggestion("PENDULUM-V1", envs, ignore_case=True) == "'PENDULUM-V1' (did you mean 'Pendulum-v1'?)"
    assert quoted_with_suggestion("seed_lst", ["seed_list"], shown="seed-lst") == "'seed-lst' (did you mean 'seed_list'?)"


def test_only_the_helper_compares_names_with_difflib():
    package = Path(sb3_ablation.__file__).parent
    users = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if "difflib" in names:
                users.add(path.relative_to(package).as_posix())
    assert users == {"common/suggestions.py"}
