"""The study package's layers (plan, store, run, analyse, render; sb3_ablation/study/__init__.py): each module imports
only from its own layer and the layers below it, the modules import each other without cycles, and no module reaches
upwards through an import hidden inside a function."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import sb3_ablation.study

STUDY = Path(sb3_ablation.study.__file__).parent
LAYERS = ("plan", "store", "run", "analyse", "render")


def modules() -> dict[str, Path]:
    """``layer.module`` -> its file, for every module of the study package."""
    return {
        f"{path.parent.name}.{path.stem}": path
        for layer in LAYERS
        for path in sorted((STUDY / layer).glob("*.py"))
        if path.stem != "__init__"
    }


def study_imports(path: Path) -> set[str]:
    """The study modules (``layer.module``) that the file imports, at the top or inside a function."""
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["sb3_ablation", "study"] and len(parts) >= 4 and parts[2] in LAYERS:
                imported.add(f"{parts[2]}.{parts[3]}")
    return imported & set(modules())


def test_the_study_package_is_its_layers():
    assert {path.name for path in STUDY.iterdir() if path.suffix == ".py"} == {"__init__.py"}
    for layer in LAYERS:
        assert f"study.{layer}`" in sb3_ablation.study.__doc__, f"the layer {layer} is not in the study's docstring"


def test_layers_import_only_from_themselves_and_the_layers_below():
    for module, path in modules().items():
        rank = LAYERS.index(module.split(".")[0])
        upward = sorted(other for other in study_imports(path) if LAYERS.index(other.split(".")[0]) > rank)
        assert not upward, f"study.{module} imports {upward}, which belong to a later layer"


def test_study_modules_import_each_other_without_cycles():
    graph = {module: study_imports(path) - {module} for module, path in modules().items()}
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle among the study's modules: {error.args[1]}") from None
