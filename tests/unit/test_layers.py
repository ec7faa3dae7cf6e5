"""The layers of the package. The study's (plan, store, run, analyse, render; sb3_ablation/study/__init__.py): each
module imports only from its own layer and the layers below it, the modules import each other without cycles, and no
module reaches upwards through an import hidden inside a function. The whole package's (:data:`RESTS_ON`, one table):
every module imports only from its folder and the folders that folder rests on (``if TYPE_CHECKING:`` imports, for
types only, excepted), without cycles; every import counted, the one declared deferred upward import included, the only
circles are those it closes through its target's folder and what ``import sb3_ablation`` has loaded already; the
checker itself is tried on a tiny package with an upward import."""

import ast
from collections.abc import Iterable
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
    # flow.py: conduct and write_report, above the layers
    assert {path.name for path in STUDY.iterdir() if path.suffix == ".py"} == {"__init__.py", "flow.py"}
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


# --- the whole package --------------------------------------------------------------------------------------------

#: The package's layers: each folder (or top-level module) of sb3_ablation -> the ones it rests on. A module may import
#: from its own folder and from every folder its folder rests on, directly or through others; an import under
#: ``if TYPE_CHECKING:`` (types only) may go anywhere. Every folder of the package must be in this table.
RESTS_ON: dict[str, tuple[str, ...]] = {
    "switches.py": (),  # the switch table
    "common": (),  # building blocks: the off-policy base, the base DDPG policies, buffers, zoo budget, suggestions
    "ddpg": ("common",),
    "td3": ("common", "switches.py"),
    "batched": ("td3",),
    "__init__.py": ("ddpg", "td3"),  # the public names: AblatableTD3, DDPG, SWITCHES
    "zoo": ("__init__.py", "batched"),  # rl_zoo3 integration
    "bench": ("__init__.py",),  # the `bench` command: training throughput against SB3
    "study": ("study/render",),  # study/__init__.py names the layers; study/flow.py: conduct and write_report above them
    "study/plan": ("zoo",),
    "study/store": ("study/plan",),
    "study/run": ("study/store",),
    "study/analyse": ("study/run",),
    "study/render": ("study/analyse",),
    "cli": ("study", "bench"),  # the `sb3-ablation` command
    "__main__.py": ("cli",),
    "train.py": ("cli",),
    "enjoy.py": ("cli",),
}


#: The one import that runs against the table, each with why: (importing module, imported module) -> reason. It must sit
#: inside a function (checked below), so that importing the lower module never imports the upper one; the circles it
#: closes may run only through its target's folder and the modules ``import sb3_ablation`` loads (checked below: e.g.
#: zoo/experiment importing zoo/trials, which imports batched, would close batched -> td3 -> common/off_policy =>
#: zoo/experiment -> zoo/trials -> batched).
DEFERRED_UPWARD: dict[tuple[str, str], str] = {
    ("sb3_ablation.common.off_policy", "sb3_ablation.zoo.experiment"): (
        "AblatableTD3.from_zoo and DDPG.from_zoo build the model with the zoo's own machinery (rl_zoo3's experiment "
        "manager, which lists the algorithms): a class method the issue asks for on the algorithm, imported when called"
    ),
}


def module_names(package_dir: Path, package: str) -> dict[str, Path]:
    """Every module of the package (dotted name, a package by its ``__init__.py``) -> its file."""
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir).with_suffix("").parts
        names[".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return names


#: Folders whose sub-folders are layers of their own.
LAYERED_FOLDERS = ("study",)


def unit_of(path: Path, package_dir: Path) -> str:
    """The table's name for what holds the file: its folder (``zoo``, ``study/plan``) or, at the top, its name."""
    parts = path.relative_to(package_dir).parts
    if len(parts) == 1:
        return parts[0]
    if parts[0] in LAYERED_FOLDERS and len(parts) > 2:
        return f"{parts[0]}/{parts[1]}"
    return parts[0]


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside ``if TYPE_CHECKING:`` blocks (not their ``else``)."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            inside |= {id(sub) for statement in node.body for sub in ast.walk(statement)}
    return inside


def imported_modules(path: Path, module: str, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports at run time: at the top or inside a function, not for types only."""
    tree = ast.parse(path.read_text())
    types_only = _type_checking_nodes(tree)
    imported = set()
    for node in ast.walk(tree):
        if id(node) in types_only:
            continue
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, up level - 1
                package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = ".".join(package_parts[: len(package_parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:  # `from package import module` imports the module
                imported.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return (imported & modules) - {module}


def package_imports(package_dir: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at run time."""
    modules = module_names(package_dir, package)
    return {module: imported_modules(path, module, set(modules)) for module, path in modules.items()}


def layer_violations(
    package_dir: Path, package: str, rests_on: dict[str, tuple[str, ...]], deferred: Iterable[tuple[str, str]] = ()
) -> list[str]:
    """One line per module outside the table and per import of a folder its folder does not rest on (but the
    ``deferred`` pairs)."""
    deferred = set(deferred)
    below = {unit: set() for unit in rests_on}
    for unit in TopologicalSorter(rests_on).static_order():  # the table's order: every folder after those it rests on
        for lower in rests_on[unit]:
            below[unit] |= {lower} | below[lower]
    files = module_names(package_dir, package)
    problems = []
    for module, imported in sorted(package_imports(package_dir, package).items()):
        unit = unit_of(files[module], package_dir)
        if unit not in rests_on:
            problems.append(f"{module}: its folder {unit} is not in the layer table")
            continue
        for other in sorted(imported):
            other_unit = unit_of(files[other], package_dir)
            if other_unit != unit and other_unit not in below[unit] and (module, other) not in deferred:
                problems.append(f"{module} imports {other}: {unit} does not rest on {other_unit}")
    return problems


def import_cycle(package_dir: Path, package: str, deferred: Iterable[tuple[str, str]] = ()) -> list[str] | None:
    """A cycle of run-time imports among the package's modules (less the ``deferred`` imports, made in a function
    once everything is imported), or None."""
    graph = package_imports(package_dir, package)
    for module, other in deferred:
        graph.get(module, set()).discard(other)
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        return list(error.args[1])
    return None


def _reachable(graph: dict[str, set[str]], start: str) -> dict[str, str | None]:
    """The modules ``start`` imports, directly or through others -> the module that imports it on one such path."""
    found: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        module = todo.pop()
        for other in sorted(graph.get(module, ())):
            if other not in found:
                found[other] = module
                todo.append(other)
    return found


def _path(found: dict[str, str | None], end: str) -> list[str]:
    path = [end]
    while (before := found[path[-1]]) is not None:
        path.append(before)
    return path[::-1]


def stray_circles(package_dir: Path, package: str, deferred: Iterable[tuple[str, str]]) -> list[str]:
    """
    Every import counted, the ``deferred`` ones included: one line per circle that a deferred import closes through a
    module outside its target's folder and outside what ``import package`` loads. When the deferred import runs (in a
    method, so after ``import package``) the rest of its circles is loaded already; such a module would be loaded by the
    method only because of the circle (as zoo/trials -> batched for ``from_zoo``).
    """
    graph = package_imports(package_dir, package)
    files = module_names(package_dir, package)
    without = {
        module: imported - {other for source, other in deferred if source == module} for module, imported in graph.items()
    }
    loaded = set(_reachable(without, package))
    problems = []
    for source, target in deferred:
        from_target = _reachable(graph, target)
        folder = unit_of(files[target], package_dir)
        for module in sorted(from_target):
            if module in loaded or unit_of(files[module], package_dir) == folder:
                continue
            back = _reachable(graph, module)
            if source in back:
                circle = [source, *_path(from_target, module), *_path(back, source)[1:]]
                problems.append(f"{module} is on the circle {' -> '.join(circle)}")
    return problems


PACKAGE_DIR = Path(sb3_ablation.__file__).parent


def test_every_module_imports_only_from_the_folders_its_folder_rests_on():
    assert layer_violations(PACKAGE_DIR, "sb3_ablation", RESTS_ON, DEFERRED_UPWARD) == []


def test_the_package_modules_import_each_other_without_cycles():
    assert import_cycle(PACKAGE_DIR, "sb3_ablation", DEFERRED_UPWARD) is None


def test_the_deferred_import_closes_circles_only_through_its_folder_and_the_loaded_modules():
    assert stray_circles(PACKAGE_DIR, "sb3_ablation", DEFERRED_UPWARD) == []


def test_the_deferred_imports_exist_and_are_made_in_a_function_only():
    files = module_names(PACKAGE_DIR, "sb3_ablation")
    for module, other in DEFERRED_UPWARD:
        tree = ast.parse(files[module].read_text())
        in_functions = {
            id(sub)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for sub in ast.walk(node)
        }
        found = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and other.startswith(node.module)
        ]
        assert found, f"{module} no longer imports {other}: remove it from DEFERRED_UPWARD"
        assert all(id(node) in in_functions for node in found), f"{module} imports {other} at module level"


def test_the_tables_study_layers_are_the_studys_order():
    assert [RESTS_ON[f"study/{layer}"] for layer in LAYERS[1:]] == [(f"study/{layer}",) for layer in LAYERS[:-1]]


def test_the_table_names_the_package_folders_and_no_others():
    assert {unit_of(path, PACKAGE_DIR) for path in PACKAGE_DIR.rglob("*.py")} == set(RESTS_ON)


# the checker's own fixture: a tiny package with a lower and an upper folder


def _fake_package(root: Path, files: dict[str, str]) -> Path:
    package_dir = root / "fakepkg"
    for name, text in {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "", **files}.items():
        (package_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (package_dir / name).write_text(text)
    return package_dir


FAKE_TABLE = {"__init__.py": (), "low": (), "high": ("low",)}


def test_the_checker_passes_downward_imports_and_upward_ones_for_types_only(tmp_path):
    package_dir = _fake_package(
        tmp_path,
        {
            "low/base.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fakepkg.high.user import User\n",
            "high/user.py": "from fakepkg.low.base import *\nfrom ..low import base\n\nclass User: ...\n",
        },
    )
    assert layer_violations(package_dir, "fakepkg", FAKE_TABLE) == []
    assert import_cycle(package_dir, "fakepkg") is None


def test_the_checker_reports_an_upward_import_even_inside_a_function(tmp_path):
    package_dir = _fake_package(
        tmp_path,
        {
            "low/base.py": "def late():\n    from fakepkg.high import user\n",
            "high/user.py": "from fakepkg.low import base\n",
        },
    )
    assert layer_violations(package_dir, "fakepkg", FAKE_TABLE) == [
        "fakepkg.low.base imports fakepkg.high.user: low does not rest on high"
    ]
    assert import_cycle(package_dir, "fakepkg") is not None


def test_the_checker_reports_an_import_in_the_else_of_type_checking_and_a_folder_outside_the_table(tmp_path):
    package_dir = _fake_package(
        tmp_path,
        {
            "low/base.py": "import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    import fakepkg.high.user\n",
            "high/user.py": "",
            "extra/__init__.py": "",
        },
    )
    assert layer_violations(package_dir, "fakepkg", FAKE_TABLE) == [
        "fakepkg.extra: its folder extra is not in the layer table",
        "fakepkg.low.base imports fakepkg.high.user: low does not rest on high",
    ]


def test_the_checker_reports_a_circle_a_deferred_import_closes_through_a_module_not_loaded(tmp_path):
    package_dir = _fake_package(
        tmp_path,
        {
            "__init__.py": "from fakepkg.low import base\n",
            "low/base.py": "def late():\n    from fakepkg.high import user\n",
            "high/user.py": "from fakepkg.high import engine\n",
            "high/engine.py": "from fakepkg.low import base\n",
            "high/entry.py": "",
            "extra/__init__.py": "",
            "extra/engine.py": "from fakepkg.low import base\n",
        },
    )
    deferred = [("fakepkg.low.base", "fakepkg.high.user")]
    assert stray_circles(package_dir, "fakepkg", deferred) == []  # only the target's folder on the circle
    (package_dir / "high" / "user.py").write_text("from fakepkg.extra import engine\n")
    assert stray_circles(package_dir, "fakepkg", deferred) == [
        "fakepkg.extra.engine is on the circle fakepkg.low.base -> fakepkg.high.user -> fakepkg.extra.engine -> "
        "fakepkg.low.base"
    ]
