"""A section of the report beyond the per-env tables (a factorial analysis, the engines' agreement, the tuned arm):
its markdown, its part of report.json and the figures it refers to, all rendered from the report model
(:mod:`~sb3_ablation.study.analyse.report_model`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Section:
    """An extra section of the report (e.g. a factorial analysis): its markdown lines and its part of report.json."""

    title: str
    lines: list[str]
    json: dict[str, Any] = field(default_factory=dict)
    # figures the lines refer to: file name under figures/ -> a function drawing it into the given path
    figures: dict[str, Callable[[Path], None]] = field(default_factory=dict)
