"""Rewrite the JSON-lines files of folders written before ampbench wrote `null` for a number that
is not finite: each line holding `NaN` or an infinity (not JSON: JavaScript's JSON.parse and jq
refuse it) is written again as ampbench writes it now (`bench.store.jsonlines.dumps`); every
other line, and every other value of such a line, is kept. A packed file (`.jsonl.gz`)
is packed again as `results.pack` packs (gzip level 9, no time stamp).

    python scripts/null_for_nan.py [DIR ...]      (default: results/)

prints each file it rewrote and how many lines; a line whose values would change beyond NaN ->
null stops it before anything is written. ampbench still reads a folder that holds `NaN`."""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.store import jsonlines  # noqa: E402  after the project is on the path

NOT_JSON = ("NaN", "Infinity")


def _same(old: object, new: object) -> bool:
    """Whether `new` is `old` with each non-finite float as None."""
    if isinstance(old, float) and not math.isfinite(old):
        return new is None
    if isinstance(old, dict):
        return (
            isinstance(new, dict)
            and list(old) == list(new)
            and all(_same(v, new[k]) for k, v in old.items())
        )
    if isinstance(old, list):
        return (
            isinstance(new, list)
            and len(old) == len(new)
            and all(_same(a, b) for a, b in zip(old, new, strict=True))
        )
    return type(old) is type(new) and old == new


def converted(text: str, name: str) -> tuple[str, int]:
    """`text` with each line that holds a non-finite number rewritten, and how many were."""
    out, changed = [], 0
    for i, line in enumerate(text.split("\n")):
        if not any(token in line for token in NOT_JSON):
            out.append(line)
            continue
        old = json.loads(line)
        new = jsonlines.dumps(old)
        if not _same(old, json.loads(new)):
            raise SystemExit(f"{name}: line {i + 1} would change beyond NaN -> null")
        changed += new != line
        out.append(new)
    return "\n".join(out), changed


def convert(path: Path) -> int:
    """Rewrite `path` in place where it holds a non-finite number; the lines rewritten."""
    packed = path.suffix == ".gz"
    data = gzip.decompress(path.read_bytes()) if packed else path.read_bytes()
    text, changed = converted(data.decode(), str(path))
    if not changed:
        return 0
    if packed:  # as results.pack writes it: the same bytes make the same file
        with gzip.GzipFile(path, "wb", 9, mtime=0) as dst:
            dst.write(text.encode())
    else:
        path.write_text(text)
    return changed


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv] or [ROOT / "results"]
    files = sorted(p for d in dirs for glob in ("*.jsonl", "*.jsonl.gz") for p in d.rglob(glob))
    total = 0
    for path in files:
        n = convert(path)
        if n:
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {n} lines")
            total += n
    print(f"{total} lines rewritten in {len(files)} JSON-lines files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
