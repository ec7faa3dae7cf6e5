"""One-off: rewrite a study folder's run records ``seed_<k>.json`` as compressed ``seed_<k>.json.gz`` (the one record
file format the store reads), content unchanged.

    python tools/migrate_records.py docs/studies/pendulum docs/studies/multitask ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sb3_ablation.study.store.runs import RECORD_SUFFIX, read_run, write_run


def migrate(folder: Path) -> int:
    converted = 0
    for path in sorted((folder / "runs").glob("*/*/seed_*.json")):
        record = json.loads(path.read_text())
        target = path.with_name(path.stem + RECORD_SUFFIX)
        write_run(target, record)
        if read_run(target) != json.loads(json.dumps(record)):
            raise SystemExit(f"{target}: the compressed record differs from {path}; nothing removed")
        path.unlink()
        converted += 1
    return converted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    for folder in parser.parse_args().folders:
        print(f"{folder}: {migrate(folder)} records compressed")


if __name__ == "__main__":
    main()
