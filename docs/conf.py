"""Sphinx configuration of the sb3-ablation documentation (``make docs``: strict, warnings are errors).

The pages are MyST markdown. ``results/`` is generated from the committed studies' reports by
``docs/generate/docs_results.py`` (``make docs`` checks that it is up to date); the study folders themselves
(``studies/``) are not source pages: the results pages include their reports and point at their figures. Nor is
``generate/``, the generators of those pages (a Python package run as ``python -m docs.generate``, not documented here).
"""

import inspect
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))  # cli_parsers: the parsers of the CLI reference
sys.path.insert(0, str(DOCS.parent))  # the package, when it is not installed

from sb3_ablation import __version__  # noqa: E402

project = "sb3-ablation"
author = "sb3-ablation contributors"
copyright = "the sb3-ablation contributors (MIT)"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "sphinxarg.ext",
    "sphinx_copybutton",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "studies/**", "generate/**", "calibration.json", "Thumbs.db", ".DS_Store"]

# MyST: GitHub-style heading anchors, so that the pages' links (`guide.md#the-six-switches`) work here and on GitHub
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4

html_theme = "sphinx_rtd_theme"
html_title = f"sb3-ablation {release}"
html_theme_options = {"navigation_depth": 3}

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}


def _literal_component_numbers(app, what, name, obj, options, lines: list[str]) -> None:
    """``:param target_networks: (3) False: ...``: the switch's component number as text, not the start of a numbered
    list (reST reads a one-line ``(3) ...`` as one, and the number then disappears from the page)."""
    lines[:] = [re.sub(r"^(:param \w+: )\((\d)\) ", r"\1\\(\2) ", line) for line in lines]


def _end_field_lists(app, what, name, obj, options, lines: list[str]) -> None:
    """A blank line after a field list that a plain sentence follows (``:param x: ...`` then ``Other parameters as
    ...``, the package's habit): reST needs it, and the strict build would refuse the docstring without it."""
    in_fields = False
    fixed: list[str] = []
    for line in lines:
        if line.startswith(":"):
            in_fields = True
        elif in_fields and line and not line[0].isspace():
            fixed.append("")
            in_fields = False
        elif not line:
            in_fields = False
        fixed.append(line)
    lines[:] = fixed


def _constructor_signature(app, what, name, obj, options, signature, return_annotation):
    """The constructor's own arguments for the algorithms: their base class defines ``__new__(cls, *args, **kwargs)``,
    which autodoc would show instead (the types are in the parameter list below, as autodoc_typehints says; private
    arguments left out)."""
    if what != "class" or signature != "(*args, **kwargs)":
        return None
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    shown = [p.replace(annotation=inspect.Parameter.empty) for p in parameters if not p.name.startswith("_")]
    return str(inspect.Signature(shown)), return_annotation


def setup(app):
    app.connect("autodoc-process-docstring", _literal_component_numbers)
    app.connect("autodoc-process-docstring", _end_field_lists)
    app.connect("autodoc-process-signature", _constructor_signature)
