"""The one number formatter of the report: values, p-values and intervals as the markdown and summaries print them."""

from __future__ import annotations

import math


def fmt(value: float | None, digits: int = 1) -> str:
    """``1,234.5``; ``n/a`` for a missing or non-finite value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def fmt_p(p: float | None) -> str:
    """A p-value: two significant digits, ``< 0.001`` below that; ``n/a`` when missing."""
    if p is None or not math.isfinite(p):
        return "n/a"
    return f"{p:.2g}" if p >= 0.001 else "< 0.001"


def fmt_ci(ci: tuple[float, float] | None, digits: int = 1) -> str:
    """``[low, high]``; empty without an interval."""
    if not ci:
        return ""
    return f"[{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"
