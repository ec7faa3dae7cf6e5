"""Reading committed report.json files by key: the generators of docs pages (answer_key.py, algorithm_pages.py) use
only fields that are there, since reports gain fields over time."""

from __future__ import annotations

from typing import Any


def dig(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, or None where a key is missing (the reports gain fields over time; none is assumed)."""
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data
