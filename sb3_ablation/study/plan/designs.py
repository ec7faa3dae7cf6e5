"""Two-level factorial designs over TD3's switches: full 2^k designs, regular fractions 2^(k-p), and their aliases.

Factor letters A, B, ... name the design's switches in :data:`~sb3_ablation.switches.SWITCHES` order; level + is the
component on, - removed, so an effect reads "what the component adds". A regular fraction is given by generators
such as ``F=ABCDE`` (the column of F is the product of the columns of A..E); its defining relation is every product
of the generator words (``I = ABCDEF``), and an effect is confounded (aliased) with its product with each of those
words (Box, Hunter & Hunter 2005, ch. 6). The resolution is the length of the shortest defining word: in a resolution
VI design such as the 2^(6-1) half fraction with I = ABCDEF, main effects and two-factor interactions are aliased only
with four- and five-factor interactions.

Spec strings (``--variants``): ``factorial`` (2^6), ``factorial:<switch>,...`` (2^k over those switches, the others
on), ``fraction`` (the half fraction of all six, I = ABCDEF), ``fraction:<switch>,...`` (the half fraction over those
switches), and explicit generators after a slash, ``fraction:<switches>/E=ABC,F=BCD``.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sb3_ablation.switches import SWITCHES

LETTERS = "ABCDEF"
INTERACTION = " x "


def multiply(*words: str) -> str:
    """The product of effect words: letters that appear an even number of times cancel (``AB * BC = AC``)."""
    counts: dict[str, int] = {}
    for word in words:
        for letter in word:
            counts[letter] = counts.get(letter, 0) + 1
    return "".join(sorted(letter for letter, count in counts.items() if count % 2))


@dataclass(frozen=True)
class Design:
    """
    :param factors: the design's switches, in ``SWITCHES`` order (factor A is the first)
    :param generators: ``("F=ABCDE",)`` for a fraction, empty for a full design
    """

    factors: tuple[str, ...]
    generators: tuple[str, ...] = ()

    @property
    def k(self) -> int:
        return len(self.factors)

    @property
    def letters(self) -> str:
        return LETTERS[: self.k]

    @property
    def defining_relation(self) -> tuple[str, ...]:
        """Every word of the defining contrast subgroup except I, shortest first."""
        words = [multiply(letter, word) for letter, word in (g.split("=") for g in self.generators)]
        group = {multiply(*combination) for r in range(1, len(words) + 1) for combination in itertools.combinations(words, r)}
        return tuple(sorted(group - {""}, key=lambda w: (len(w), w)))

    @property
    def resolution(self) -> int | None:
        relation = self.defining_relation
        return min(len(word) for word in relation) if relation else None

    @property
    def cells(self) -> tuple[dict[str, bool], ...]:
        """The runs of the design, in standard (Yates) order of the base factors; switches outside it are on."""
        generated = {g.split("=")[0]: g.split("=")[1] for g in self.generators}
        base = [letter for letter in self.letters if letter not in generated]
        cells = []
        for levels in itertools.product((-1, 1), repeat=len(base)):
            sign = dict(zip(base, reversed(levels), strict=True))  # Yates order: A changes fastest
            for letter, word in generated.items():
                sign[letter] = int(np.prod([sign[w] for w in word]))
            switches = dict.fromkeys(SWITCHES, True)
            switches.update({factor: sign[letter] > 0 for factor, letter in zip(self.factors, self.letters, strict=True)})
            cells.append(switches)
        return tuple(cells)

    def describe(self) -> str:
        if not self.generators:
            return f"full 2^{self.k} factorial over {', '.join(self.factors)}"
        p = len(self.generators)
        return (
            f"2^({self.k}-{p}) fraction over {', '.join(self.factors)}, generators {', '.join(self.generators)} "
            f"(I = {' = '.join(self.defining_relation)}, resolution {roman(self.resolution or 0)})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "factors": list(self.factors),
            "generators": list(self.generators),
            "defining_relation": list(self.defining_relation),
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Design:
        return fractional_factorial(values["factors"], values.get("generators", ()))


def roman(n: int) -> str:
    return {3: "III", 4: "IV", 5: "V", 6: "VI"}.get(n, str(n))


def _check_switches(switches: Sequence[str], spec: str) -> tuple[str, ...]:
    for switch in switches:
        if switch not in SWITCHES:
            close = difflib.get_close_matches(switch, SWITCHES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{spec}: unknown switch {switch!r}{hint}; expected some of {', '.join(SWITCHES)}")
    if len(set(switches)) != len(switches) or len(switches) < 2:
        raise ValueError(f"{spec}: expected at least two different switches, got {', '.join(switches) or 'none'}")
    return tuple(s for s in SWITCHES if s in switches)


def full_factorial(switches: Sequence[str]) -> Design:
    """The 2^k design over ``switches``."""
    return Design(_check_switches(switches, "factorial"))


def reduced_generators(words: Sequence[str]) -> tuple[str, ...]:
    """
    Generators ``X=WORD`` equivalent to the defining ``words``: their reduced row-echelon form over GF(2), each word's
    last letter generated from the rest (a generated letter appears in no other generator).
    """
    rows: list[int] = []
    for word in words:
        bits = sum(1 << LETTERS.index(c) for c in word)
        for row in rows:
            if bits & (1 << (row.bit_length() - 1)):
                bits ^= row
        if bits:
            pivot = 1 << (bits.bit_length() - 1)
            rows = [row ^ bits if row & pivot else row for row in rows] + [bits]
    generators = []
    for row in sorted(rows, key=lambda r: r.bit_length()):
        letters = "".join(LETTERS[i] for i in range(row.bit_length()) if row >> i & 1)
        generators.append(f"{letters[-1]}={letters[:-1]}")
    return tuple(generators)


def fractional_factorial(switches: Sequence[str], generators: Sequence[str]) -> Design:
    """The 2^(k-p) fraction over ``switches`` from generators like ``F=ABCDE``."""
    factors = _check_switches(switches, "fraction")
    letters = LETTERS[: len(factors)]
    words = []
    for generator in generators:
        left, sep, right = generator.replace(" ", "").upper().partition("=")
        if not (sep and len(left) == 1 and left in letters and right and set(right) <= set(letters) and left not in right):
            raise ValueError(
                f"fraction: bad generator {generator!r}; expected LETTER=WORD over {letters}, "
                f"e.g. {letters[-1]}={letters[:-1]}"
            )
        words.append(multiply(left, right))
    reduced = reduced_generators(words)
    if len(reduced) != len(words):
        raise ValueError(f"fraction: the generators {', '.join(generators)} are not independent")
    return Design(factors, reduced)


def half_fraction(switches: Sequence[str]) -> Design:
    """The half fraction over ``switches`` with I = the product of all factors (the last factor generated)."""
    factors = _check_switches(switches, "fraction")
    letters = LETTERS[: len(factors)]
    return fractional_factorial(factors, [f"{letters[-1]}={letters[:-1]}"])


def parse_design(spec: str) -> Design | None:
    """The design a ``--variants`` spec names (``None``: not a design spec); see the module docstring."""
    name, _, rest = spec.partition(":")
    if name not in ("factorial", "fraction"):
        return None
    switches_part, _, generators_part = rest.partition("/")
    switches = [s.strip() for s in switches_part.split(",") if s.strip()] or list(SWITCHES)
    if name == "factorial":
        if generators_part:
            raise ValueError(f"{spec}: a full factorial takes no generators; use fraction:<switches>/<generators>")
        return full_factorial(switches)
    if generators_part:
        return fractional_factorial(switches, [g for g in generators_part.split(",") if g.strip()])
    return half_fraction(switches)


def effect_words(k: int, max_order: int = 2) -> list[str]:
    """Effect words up to ``max_order`` letters in conventional order: A, B, ..., AB, AC, ..., ABC, ..."""
    return ["".join(c) for order in range(1, max_order + 1) for c in itertools.combinations(LETTERS[:k], order)]


def alias_structure(design: Design, max_order: int = 3) -> dict[str, tuple[str, ...]]:
    """For each effect word up to ``max_order`` letters, the words it is confounded with (empty for a full design)."""
    relation = design.defining_relation
    return {
        word: tuple(sorted({multiply(word, d) for d in relation}, key=lambda w: (len(w), w)))
        for word in effect_words(design.k, max_order)
    }


def word_name(word: str, factors: Sequence[str]) -> str:
    """``AB`` -> ``target_networks x clipped_double_q`` (letters of the design's factors)."""
    return INTERACTION.join(factors[LETTERS.index(letter)] for letter in word)


def model_matrix(cells: Sequence[Mapping[str, bool]], factors: Sequence[str], words: Sequence[str]) -> np.ndarray:
    """The ±1 column of each word for each cell (rows: cells; + where the product of the factors' levels is +)."""
    levels = np.array([[1.0 if cell[f] else -1.0 for f in factors] for cell in cells]).reshape(len(cells), len(factors))
    return np.stack([np.prod(levels[:, [LETTERS.index(c) for c in word]], axis=1) for word in words], axis=1)


def find_design(variant_switches: Mapping[str, Mapping[str, bool]]) -> tuple[Design, dict[str, str]] | None:
    """
    The design the variants form (switches that vary are the factors), with the variant of each cell (a canonical
    key of its levels -> variant name); ``None`` when they form no full design or regular fraction of two or more
    factors.
    """
    if len(variant_switches) < 4:
        return None
    factors = tuple(s for s in SWITCHES if len({sw[s] for sw in variant_switches.values()}) == 2)
    if len(factors) < 2:
        return None
    key = {variant: "".join("+" if sw[f] else "-" for f in factors) for variant, sw in variant_switches.items()}
    if len(set(key.values())) != len(key):
        return None
    cells = [dict(zip(factors, (c == "+" for c in k), strict=True)) for k in key.values()]
    letters = LETTERS[: len(factors)]
    # the words whose column is constant over the cells form the defining relation of a regular fraction
    words = [w for order in range(1, len(factors) + 1) for w in ("".join(c) for c in itertools.combinations(letters, order))]
    matrix = model_matrix(cells, factors, words)
    defining = [w for j, w in enumerate(words) if np.all(matrix[:, j] == 1)]
    if any(np.all(matrix[:, j] == -1) for j in range(len(words))):
        return None  # a fraction with I = -WORD: valid, but not one the report reads
    if len(cells) * (len(defining) + 1) != 2 ** len(factors):
        return None
    generators = reduced_generators(defining)
    design = Design(factors, tuple(generators))
    if set(design.defining_relation) != set(defining):
        return None
    return design, {k: v for v, k in key.items()}
