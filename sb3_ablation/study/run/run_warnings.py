"""The warnings a run raises: recorded (``warnings.catch_warnings(record=True)``), each once, instead of printed."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator


class RunWarnings:
    """
    The warnings of one run (or batched group): those of the runs it resumes (:meth:`resume`), then those raised
    inside :meth:`capture`, each as ``"Category: message"``, once, in the order first raised.
    """

    def __init__(self) -> None:
        self._resumed: list[str] = []
        self._caught: list[warnings.WarningMessage] = []

    @contextlib.contextmanager
    def capture(self) -> Iterator[RunWarnings]:
        """
        Record the warnings raised inside instead of printing them: the first of each message from each place (the
        ``"default"`` action, in a fresh registry), so that a warning raised at every step is kept once.
        Deprecations of libraries (e.g. SWIG types of Box2D at import) say nothing about the run: ignored.
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            self._caught = caught
            try:
                yield self
            finally:
                self._caught = list(caught)

    def resume(self, messages: Iterable[str]) -> None:
        """Take the warnings of the runs this one resumes (saved with a checkpoint: :meth:`messages`)."""
        self._resumed = list(messages)

    def messages(self) -> list[str]:
        """The warnings so far, each once: ``"Category: message"``."""
        raised = (f"{warning.category.__name__}: {warning.message}" for warning in self._caught)
        return list(dict.fromkeys([*self._resumed, *raised]))
