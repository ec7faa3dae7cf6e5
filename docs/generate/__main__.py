"""``python -m docs.generate [--check]``: every generator of the docs' pages in turn (:mod:`docs.generate`); with
``--check``, each compares only, and the exit status is 1 when any page differs from a fresh generation."""

from __future__ import annotations

import argparse
import sys

from docs.generate import algorithm_pages, answer_key, docs_results, plain_answer, readme_answer

#: in the order they run: the results pages, the README's answer, its figures, the answer key, the algorithm pages
GENERATORS = (docs_results, readme_answer, plain_answer, answer_key, algorithm_pages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare every generated page with a fresh generation")
    args = parser.parse_args(argv)
    # every generator runs, so that one call names every stale page
    failed = [generator.__name__ for generator in GENERATORS if generator.main(["--check"] if args.check else []) != 0]
    if failed:
        print(f"docs.generate: {', '.join(failed)} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
