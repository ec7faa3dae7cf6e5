"""The report flows one way: analyse computes the report model, render only reads it. render/ imports from analyse/
types and constants (or anything under ``TYPE_CHECKING``), never a function, except the one entry point that
composes the two (``write_report``: ``analyse_study`` then ``render_report``)."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import sb3_ablation.study.render

RENDER = Path(sb3_ablation.study.render.__file__).parent
ANALYSE = "sb3_ablation.study.analyse"
# (render module, name): the functions of analyse/ a render module may import
ENTRY_POINTS = {("report", "analyse_study")}


def _type_checking_blocks(tree: ast.Module) -> set[int]:
    """The ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            inside |= {id(child) for child in ast.walk(node)}
    return inside


def runtime_analyse_imports(source: str) -> list[tuple[str, str]]:
    """(module, name) of every import from analyse/ that runs (outside ``TYPE_CHECKING``)."""
    tree = ast.parse(source)
    skipped = _type_checking_blocks(tree)
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ANALYSE) and id(node) not in skipped
        for alias in node.names
    ]


def computing_imports(module: str, source: str) -> list[str]:
    """The functions of analyse/ that a render module imports at run time, entry points aside."""
    found = []
    for origin, name in runtime_analyse_imports(source):
        if (module, name) in ENTRY_POINTS:
            continue
        if inspect.isroutine(getattr(importlib.import_module(origin), name)):
            found.append(f"{origin}.{name}")
    return found


@pytest.mark.parametrize("path", sorted(RENDER.glob("*.py")), ids=lambda path: path.stem)
def test_render_imports_only_types_and_constants_from_analyse(path):
    assert computing_imports(path.stem, path.read_text()) == [], f"render/{path.name} imports a function of analyse/"


def test_the_check_sees_a_function_imported_from_analyse_and_skips_type_checking():
    source = (
        "from typing import TYPE_CHECKING\n"
        "from sb3_ablation.study.analyse.statistics import MIN_RUNS, outcome_statistics\n"
        "from sb3_ablation.study.analyse.report_model import ReportModel\n"
        "if TYPE_CHECKING:\n"
        "    from sb3_ablation.study.analyse.factorial import analyse_outcome\n"
    )
    assert computing_imports("figures", source) == ["sb3_ablation.study.analyse.statistics.outcome_statistics"]


@pytest.mark.parametrize("call", ["analyse_outcome(", "engine_check(", "tuning_comparison(", "build_model(", "load_study("])
def test_render_calls_no_analysis(call):
    for path in RENDER.glob("*.py"):
        assert call not in path.read_text(), f"render/{path.name} calls {call}...)"
