"""Two-level factorial designs over TD3's switches: full 2^k designs, regular fractions 2^(k-p), and their aliases.

Pure design algebra (numpy only). Factor letters A, B, ... name the design's switches in
:data:`~sb3_ablation.switches.SWITCHES` order (the first chosen switch is A); level + is the component on (present),
- removed, so a main effect reads "what the component adds". Switches outside a design stay on in all its cells.

A regular fraction is given by generators such as ``F=ABCDE``: the column of the generated factor F is the product of
the columns of the base factors A..E. Its defining relation is every product of the generator words (``I = ABCDEF``),
and an effect is confounded (aliased) with its product with each of those words, letters cancelling in pairs
(Box, Hunter & Hunter 2005, ch. 6). The resolution is the length of the shortest defining word: in a resolution VI
design such as the 2^(6-1) half fraction with I = ABCDEF, main effects and two-factor interactions are aliased only
with four- and five-factor interactions. Only the principal fraction (I = +WORD) is built: it holds full TD3.

Spec strings (``--variants``, :func:`parse_design`):

- ``factorial``: the full 2^6 design over all six switches (64 cells);
- ``factorial:<switch>,<switch>,...``: the full 2^k design over those switches, the others on;
- ``fraction``: the half fraction of all six, I = ABCDEF (32 cells, resolution VI);
- ``fraction:<switch>,...``: the half fraction over those switches (at least three), the last generated from the
  others (I = the product of all of them);
- ``fraction:<switches>/<generator>,<generator>``: explicit generators after a slash, separated by commas (or
  semicolons), e.g. ``fraction:deterministic_policy,replay_buffer,target_networks,target_policy_smoothing,
  delayed_policy_update,clipped_double_q/E=ABC,F=BCD`` (the 2^(6-2) with I = ABCE = BCDF = ADEF, resolution IV);
  an empty switch list (``fraction:/E=ABC,F=BCD``) means all six. A fraction must be of resolution III or more (no
  two main effects aliased).

Generators are stored in a canonical form (reduced row-echelon over GF(2), each generated letter the last of its
word: ``A=BCD`` is kept as ``D=ABC``, the same fraction), so one fraction has one spelling in a study's manifest.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from sb3_ablation.common.suggestions import did_you_mean
from sb3_ablation.switches import SWITCHES

# "I" is left out: it names the identity word of a defining relation (as in Box, Hunter & Hunter)
LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
INTERACTION = " x "
DESIGN_NAMES = ("factorial", "fraction")
# a fraction below this resolution aliases main effects with each other: no use for an ablation
MIN_RESOLUTION = 3


def multiply(*words: str) -> str:
    """The product of effect words: letters that appear an even number of times cancel (``AB * BC = AC``)."""
    counts: dict[str, int] = {}
    for word in words:
        for letter in word:
            counts[letter] = counts.get(letter, 0) + 1
    return "".join(sorted((letter for letter, count in counts.items() if count % 2), key=LETTERS.index))


def _by_length(words: Sequence[str] | set[str]) -> tuple[str, ...]:
    """Words shortest first, then in letter order (``A`` before ``B``, ``AB`` before ``AC``)."""
    return tuple(sorted(words, key=lambda w: (len(w), [LETTERS.index(c) for c in w])))


def roman(n: int) -> str:
    """The resolution's customary Roman numeral."""
    return {2: "II", 3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}.get(n, str(n))


def _parse_generators(generators: Sequence[str], letters: str, context: str = "fraction") -> list[tuple[str, str]]:
    """
    Check generators ``X=WORD`` against the design's letters.

    :return: (generated letter, word) per generator, normalised (upper case, no spaces)
    :raises ValueError: one line naming the bad generator and what is expected
    """
    expected = (
        f"expected LETTER=WORD over the factors {letters}, the generated factor's column being the product of base "
        f"factors' columns, e.g. {letters[-1]}={letters[:-1]}"
    )
    parsed: list[tuple[str, str]] = []
    for text in generators:
        left, sep, right = str(text).replace(" ", "").upper().partition("=")
        bad = f"{context}: bad generator {text!r}"
        if not (sep and len(left) == 1 and right and (left + right).isalpha()):
            raise ValueError(f"{bad}; {expected}")
        outside = sorted(set(left + right) - set(letters))
        if outside:
            raise ValueError(f"{bad}: {', '.join(outside)} not among the design's {len(letters)} factors; {expected}")
        if left in right:
            raise ValueError(f"{bad}: {left} on both sides; {expected}")
        if len(set(right)) != len(right):
            raise ValueError(f"{bad}: a letter repeated in {right}; {expected}")
        parsed.append((left, right))
    generated = [left for left, _ in parsed]
    base = "".join(c for c in letters if c not in generated)
    for text, (left, right) in zip(generators, parsed, strict=True):
        if generated.count(left) > 1:
            raise ValueError(f"{context}: bad generator {text!r}: {left} is generated twice; expected each factor once")
        used = [c for c in right if c in generated]
        if used:
            raise ValueError(
                f"{context}: bad generator {text!r}: {', '.join(used)} is itself generated; expected a word over the "
                f"base factors {base or '(none)'}"
            )
    return parsed


@dataclass(frozen=True)
class Design:
    """
    A full 2^k design or a regular 2^(k-p) fraction over some of TD3's switches.

    :param factors: the design's switches, in ``SWITCHES`` order (factor A is the first)
    :param generators: ``("F=ABCDE",)`` for a fraction, empty for a full design (build fractions with
        :func:`fractional_factorial`, which checks them and writes them in canonical form)

    Derived (computed once): ``cells`` (the runs, a dict switch -> bool over all six switches each, in standard
    (Yates) order of the base factors: the first base factor changes fastest, all removed first),
    ``defining_relation`` (every word of the defining contrast subgroup except I, shortest first), ``resolution``
    (``None`` for a full design), ``signs`` (the ±1 levels of the factors, one row per cell).
    """

    factors: tuple[str, ...]
    generators: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # lists from JSON become tuples, so that designs compare and hash by value
        object.__setattr__(self, "factors", tuple(self.factors))
        object.__setattr__(self, "generators", tuple(self.generators))
        unknown = [f for f in self.factors if f not in SWITCHES]
        if unknown:
            raise ValueError(f"design: unknown switch {unknown[0]!r}; expected some of {', '.join(SWITCHES)}")
        if list(self.factors) != [s for s in SWITCHES if s in self.factors] or len(set(self.factors)) != self.k:
            raise ValueError(f"design: factors {', '.join(self.factors)} must be distinct and in SWITCHES order")
        _parse_generators(self.generators, self.letters)

    @property
    def k(self) -> int:
        """The number of factors."""
        return len(self.factors)

    @property
    def letters(self) -> str:
        """The factors' letters, ``ABC...``."""
        return LETTERS[: self.k]

    @cached_property
    def _generated(self) -> dict[str, str]:
        return dict(_parse_generators(self.generators, self.letters))

    @cached_property
    def signs(self) -> np.ndarray:
        """The ±1 level of each factor (columns, in letter order) in each cell (rows, in standard order)."""
        base = [c for c in self.letters if c not in self._generated]
        runs = np.arange(2 ** len(base))
        signs = np.ones((len(runs), self.k), dtype=np.int8)
        for j, letter in enumerate(base):
            # standard (Yates) order: the j-th base factor flips every 2^j runs, starting at -
            signs[:, self.letters.index(letter)] = np.where((runs >> j) & 1, 1, -1)
        for letter, word in self._generated.items():
            signs[:, self.letters.index(letter)] = np.prod(signs[:, [self.letters.index(c) for c in word]], axis=1)
        signs.flags.writeable = False
        return signs

    @property
    def cells(self) -> tuple[dict[str, bool], ...]:
        """The runs of the design in standard order: all six switches each, those outside the design on."""
        # fresh dicts on every call: a caller's edit cannot change the design
        return tuple(
            {s: bool(row[self.factors.index(s)] > 0) if s in self.factors else True for s in SWITCHES} for row in self.signs
        )

    @cached_property
    def defining_relation(self) -> tuple[str, ...]:
        """Every word of the defining contrast subgroup except I, shortest first."""
        words = [multiply(letter, word) for letter, word in self._generated.items()]
        group = {multiply(*combo) for r in range(1, len(words) + 1) for combo in itertools.combinations(words, r)}
        return _by_length(group - {""})

    @property
    def resolution(self) -> int | None:
        """The length of the shortest defining word; ``None`` for a full design."""
        relation = self.defining_relation
        return min(len(word) for word in relation) if relation else None

    def index(self, cell: Mapping[str, bool]) -> int | None:
        """The row of ``cell`` (its levels of the design's factors) among :attr:`cells`; ``None``: not in the fraction."""
        row = np.array([1 if cell[f] else -1 for f in self.factors])
        matches = np.flatnonzero(np.all(self.signs == row, axis=1))
        return int(matches[0]) if len(matches) else None

    def describe(self) -> str:
        """One line for reports."""
        if not self.generators:
            return f"full 2^{self.k} factorial over {', '.join(self.factors)}"
        p = len(self.generators)
        return (
            f"2^({self.k}-{p}) fraction over {', '.join(self.factors)}, generators {', '.join(self.generators)} "
            f"(I = {' = '.join(self.defining_relation)}, resolution {roman(self.resolution or 0)})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The design for JSON (a study's manifest and report)."""
        return {
            "factors": list(self.factors),
            "generators": list(self.generators),
            "defining_relation": list(self.defining_relation),
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Design:
        """
        The design :meth:`to_dict` wrote.

        :raises ValueError: when its stated defining relation is not the one its generators give
        """
        design = fractional_factorial(values["factors"], values.get("generators", ()), min_resolution=None)
        stated = values.get("defining_relation")
        if stated is not None and set(stated) != set(design.defining_relation):
            raise ValueError(
                f"design: defining relation {' = '.join(stated) or 'I'} does not follow from generators "
                f"{', '.join(design.generators) or '(none)'}; expected I = {' = '.join(design.defining_relation) or 'I'}"
            )
        return design


def _check_switches(switches: Sequence[str], context: str) -> tuple[str, ...]:
    """The switches in ``SWITCHES`` order; a one-line ``ValueError`` for an unknown, repeated or missing one."""
    for switch in switches:
        if switch not in SWITCHES:
            hint = did_you_mean(switch, SWITCHES)
            raise ValueError(f"{context}: unknown switch {switch!r}{hint}; expected some of {', '.join(SWITCHES)}")
    repeated = [s for s in SWITCHES if list(switches).count(s) > 1]
    if repeated:
        raise ValueError(f"{context}: switch {repeated[0]!r} named twice; expected each switch once")
    if len(switches) < 2:
        raise ValueError(f"{context}: expected at least two different switches, got {', '.join(switches) or 'none'}")
    return tuple(s for s in SWITCHES if s in switches)


def full_factorial(switches: Sequence[str]) -> Design:
    """The 2^k design over ``switches`` (at least two), the other switches on."""
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


def fractional_factorial(
    switches: Sequence[str], generators: Sequence[str], min_resolution: int | None = MIN_RESOLUTION
) -> Design:
    """
    The 2^(k-p) fraction over ``switches`` from ``p`` generators like ``F=ABCDE`` (no generators: the full design).

    :param switches: the factors (put in ``SWITCHES`` order: the first is A)
    :param generators: ``X=WORD`` each, X a generated factor and WORD base factors only (e.g. ``E=ABC``, ``F=BCD``)
    :param min_resolution: refuse a fraction of lower resolution (``None``: any)
    :raises ValueError: one line naming the bad generator or switch and what is expected
    """
    factors = _check_switches(switches, "fraction")
    parsed = _parse_generators(generators, LETTERS[: len(factors)])
    design = Design(factors, reduced_generators([multiply(left, right) for left, right in parsed]))
    resolution = design.resolution
    if min_resolution is not None and resolution is not None and resolution < min_resolution:
        word = design.defining_relation[0]
        raise ValueError(
            f"fraction: generators {', '.join(generators)} give I = {word} (resolution {roman(resolution)}), aliasing "
            f"{' with '.join(word[:1] + word[1:2]) if resolution == 2 else 'low-order effects'}; expected resolution "
            f"{roman(min_resolution)} or more (longer generator words)"
        )
    return design


def half_fraction(switches: Sequence[str]) -> Design:
    """The half fraction over ``switches`` (at least three) with I = the product of all factors (the last generated)."""
    factors = _check_switches(switches, "fraction")
    if len(factors) < 3:
        raise ValueError(
            f"fraction: a half fraction of {' and '.join(factors)} would alias their main effects; expected at least "
            "three switches (or factorial:<switch>,<switch>)"
        )
    letters = LETTERS[: len(factors)]
    return fractional_factorial(factors, [f"{letters[-1]}={letters[:-1]}"])


def parse_design(spec: str) -> Design | None:
    """
    The design a ``--variants`` spec names (the syntax is in the module docstring).

    :return: ``None`` when ``spec`` is no design spec (neither ``factorial``/``fraction`` nor ``<name>:...``)
    :raises ValueError: one line naming the offending token (with a did-you-mean for a misspelt switch or design)
    """
    name, colon, rest = spec.strip().partition(":")
    if name not in DESIGN_NAMES:
        if not colon:
            return None
        hint = did_you_mean(name, DESIGN_NAMES)
        raise ValueError(
            f"{spec}: unknown design {name!r}{hint}; expected factorial:<switch>,... or fraction:<switch>,...[/<generators>]"
        )
    switches_part, slash, generators_part = rest.partition("/")
    switches = [s.strip() for s in switches_part.split(",") if s.strip()] or list(SWITCHES)
    generators = [g.strip() for g in re.split(r"[,;]", generators_part) if g.strip()]
    if name == "factorial":
        if slash:
            raise ValueError(f"{spec}: a full factorial takes no generators; use fraction:<switches>/<generators>")
        return full_factorial(switches)
    if slash and not generators:
        raise ValueError(f"{spec}: no generator after '/'; expected fraction:<switches>/<generator>,... e.g. /E=ABC,F=BCD")
    return fractional_factorial(switches, generators) if generators else half_fraction(switches)


def effect_words(k: int, max_order: int = 2) -> list[str]:
    """Effect words of ``k`` factors up to ``max_order`` letters, conventional order: A, B, ..., AB, AC, ..., ABC, ..."""
    return ["".join(c) for order in range(1, max_order + 1) for c in itertools.combinations(LETTERS[:k], order)]


def _check_words(words: Sequence[str], letters: str) -> None:
    for word in words:
        if not word or set(word) - set(letters) or len(set(word)) != len(word):
            raise ValueError(f"bad effect word {word!r}; expected distinct letters of {letters}, e.g. {letters[:2]}")


def aliases(design: Design, word: str) -> tuple[str, ...]:
    """The words ``word`` is confounded with in ``design`` (its product with each defining word), shortest first."""
    _check_words([word], design.letters)
    return _by_length({multiply(word, d) for d in design.defining_relation})


def alias_structure(design: Design, max_order: int = 3) -> dict[str, tuple[str, ...]]:
    """For each effect word up to ``max_order`` letters, the words it is confounded with (empty for a full design)."""
    return {word: aliases(design, word) for word in effect_words(design.k, max_order)}


def word_name(word: str, factors: Sequence[str]) -> str:
    """``AB`` -> ``target_networks x clipped_double_q`` (letters of the design's factors)."""
    return INTERACTION.join(factors[LETTERS.index(letter)] for letter in word)


def _columns(signs: np.ndarray, letters: str, words: Sequence[str]) -> np.ndarray:
    _check_words(words, letters)
    columns = [np.prod(signs[:, [letters.index(c) for c in word]], axis=1) for word in words]
    return np.stack(columns, axis=1).astype(float) if columns else np.zeros((len(signs), 0))


def model_matrix(design: Design, words: Sequence[str]) -> np.ndarray:
    """
    The ±1 product column of each word for each cell: ``(n_cells, n_words)``, + where the product of the factors'
    levels is + (level + = the component on).

    :param design: the design (rows: its cells in standard order)
    :param words: effect words such as ``A``, ``AB``, ``ABC``
    """
    return _columns(design.signs.astype(float), design.letters, words)


def find_design(variant_switches: Mapping[str, Mapping[str, bool]]) -> tuple[Design, dict[str, str]] | None:
    """
    The design the variants form (switches that vary are the factors), with the variant of each cell (a canonical
    key of its levels, ``+-+...`` -> variant name); ``None`` when they form no full design or principal regular
    fraction of two or more factors.
    """
    if len(variant_switches) < 4:
        return None
    factors = tuple(s for s in SWITCHES if len({sw[s] for sw in variant_switches.values()}) == 2)
    if len(factors) < 2:
        return None
    key = {variant: "".join("+" if sw[f] else "-" for f in factors) for variant, sw in variant_switches.items()}
    if len(set(key.values())) != len(key):
        return None
    letters = LETTERS[: len(factors)]
    signs = np.array([[1.0 if c == "+" else -1.0 for c in k] for k in key.values()])
    # the words whose column is constant over the cells form the defining relation of a regular fraction
    words = effect_words(len(factors), len(factors))
    matrix = _columns(signs, letters, words)
    defining = [w for j, w in enumerate(words) if np.all(matrix[:, j] == 1)]
    if any(np.all(matrix[:, j] == -1) for j in range(len(words))):
        return None  # a fraction with I = -WORD: valid, but not one the report reads
    if len(key) * (len(defining) + 1) != 2 ** len(factors):
        return None
    design = Design(factors, reduced_generators(defining))
    if set(design.defining_relation) != set(defining):
        return None
    return design, {k: v for v, k in key.items()}
