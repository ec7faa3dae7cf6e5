"""Where the generators read and write (the repository's folders, the paper's table), and the one way each of them
writes its files or, with ``--check``, compares them (:func:`write_or_check`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "docs" / "studies"
RESULTS = ROOT / "docs" / "results"
#: the TD3 paper's Table 2, data
TABLE2 = Path(__file__).with_name("td3_paper_table2.yml")


def shown(path: Path) -> str:
    """``path`` relative to the repository's root where it lies inside it (a test's folder: as it is)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def write_or_check(fresh: Mapping[Path, str | bytes], check: bool, command: str, extra: Iterable[Path] = ()) -> int:
    """
    Bring the files in line with a fresh generation: write each file of ``fresh`` whose content differs (text or
    bytes) and remove the ``extra`` files (generated before, no longer generated). With ``check``, write nothing and
    print one line naming every file that differs.

    :param fresh: path -> the content a fresh generation gives
    :param check: compare only
    :param command: the command that rewrites the files, for the message
    :param extra: files that a fresh generation no longer has
    :return: the exit status: 1 when ``check`` finds a file that differs, else 0
    """

    def differs(path: Path, content: str | bytes) -> bool:
        if not path.is_file():
            return True
        return (path.read_bytes() if isinstance(content, bytes) else path.read_text()) != content

    stale = [path for path, content in fresh.items() if differs(path, content)]
    gone = [path for path in extra if path.exists()]
    if check:
        if stale or gone:
            names = ", ".join(shown(path) for path in stale + gone)
            print(f"not what the committed reports give: {names}; run `{command}`", file=sys.stderr)
            return 1
        return 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        content = fresh[path]
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    for path in gone:
        path.unlink()
    if stale or gone:
        print(", ".join([*(f"wrote {shown(path)}" for path in stale), *(f"removed {shown(path)}" for path in gone)]))
    return 0
