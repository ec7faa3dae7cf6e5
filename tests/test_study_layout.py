"""The study's four parts (plan, store, run, analyse; sb3_ablation/study/__init__.py): each module imports only from
its own part and the parts above it, and the study's modules import each other without cycles (imports inside
functions included)."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import sb3_ablation.study

STUDY = Path(sb3_ablation.study.__file__).parent
PARTS = {
    "plan": ("variants", "records", "config", "plan"),
    "store": ("store",),
    "run": ("execute", "evaluation", "batched", "engines", "backends", "runner"),
    "analyse": ("results", "inference", "statistics", "analysis", "engine_check", "factorial", "report", "figures", "answer"),
    "command line": ("cli",),
}
ORDER = {module: rank for rank, modules in enumerate(PARTS.values()) for module in modules}


def study_imports(module: str) -> set[str]:
    """The study modules that ``module`` imports, at the top or inside a function."""
    tree = ast.parse((STUDY / f"{module}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        imported |= {name.split(".")[2] for name in names if name.startswith("sb3_ablation.study.")}
    return imported - {module}


def test_every_study_module_belongs_to_one_part():
    modules = {path.stem for path in STUDY.glob("*.py")} - {"__init__"}
    assert modules == set(ORDER), "a study module is missing from PARTS (or PARTS names one that is gone)"
    for module in ORDER:
        assert f"study.{module}`" in sb3_ablation.study.__doc__, f"{module} is not in the study's layout docstring"


def test_parts_import_only_from_themselves_and_the_parts_above():
    for module, rank in ORDER.items():
        later = sorted(other for other in study_imports(module) if ORDER[other] > rank)
        assert not later, f"study.{module} imports {later}, which belong to a later part"


def test_study_modules_import_each_other_without_cycles():
    graph = {module: study_imports(module) for module in ORDER}
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle among the study's modules: {error.args[1]}") from None
