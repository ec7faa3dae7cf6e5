"""Did-you-mean suggestions for a misspelt name, the one place that compares names (with :mod:`difflib`).

Every error message that names an unknown switch, variant, design, key, algorithm or env and suggests the closest
valid one builds its suggestion here, so that they all find the same name. The messages put it in one of two forms:
``"unknown switch 'twin_q' (did you mean 'twin_critics'?)"`` (:func:`did_you_mean`, :func:`quoted_with_suggestion`)
or ``"unknown algorithm 'td4'; did you mean 'td3'? (expected one of ...)"`` (:func:`did_you_mean` with
``separator="; "``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: How alike (difflib's ratio, 0 to 1) a valid name must be to a misspelt one to be suggested: difflib's default.
CUTOFF = 0.6


def closest_name(name: str, candidates: Iterable[str], ignore_case: bool = False) -> str | None:
    """
    :param name: a misspelt name
    :param candidates: the valid names
    :param ignore_case: compare lower-cased names (the suggestion keeps the candidate's own case)
    :return: the valid name closest to ``name``, or None when none is close enough (see :data:`CUTOFF`)
    """
    by_compared = {(candidate.lower() if ignore_case else candidate): candidate for candidate in candidates}
    matches = difflib.get_close_matches(name.lower() if ignore_case else name, list(by_compared), n=1, cutoff=CUTOFF)
    return by_compared[matches[0]] if matches else None


def did_you_mean(name: str, candidates: Iterable[str], ignore_case: bool = False, separator: str = " (") -> str:
    """
    :param name: a misspelt name
    :param candidates: the valid names
    :param ignore_case: compare lower-cased names
    :param separator: what comes before the question: ``" ("`` gives ``" (did you mean 'x'?)"``, ``"; "`` gives
        ``"; did you mean 'x'?"``
    :return: the suggestion of the closest valid name, to append to a message; "" when none is close
    """
    closest = closest_name(name, candidates, ignore_case)
    if closest is None:
        return ""
    return f"{separator}did you mean {closest!r}?{')' if separator.endswith('(') else ''}"


def quoted_with_suggestion(name: str, candidates: Iterable[str], ignore_case: bool = False, shown: str | None = None) -> str:
    """
    :param name: a misspelt name
    :param candidates: the valid names
    :param ignore_case: compare lower-cased names
    :param shown: the name as the message shows it, when ``name`` is a normalised form of it (default: ``name``)
    :return: ``'name' (did you mean 'x'?)``, or ``'name'`` when no valid name is close
    """
    return repr(name if shown is None else shown) + did_you_mean(name, candidates, ignore_case)
