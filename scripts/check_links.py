"""Every relative link of README.md, docs/*.md and results/**/*.md that names no file: prints one
line per broken link (file:line: target) and exits 1 when there is one, else prints nothing.

A link is `[text](target)` or `![alt](target)`; web addresses, mail and in-page anchors are left
out, and a target's `#anchor` is dropped before the file is looked up. Run from anywhere:
`python scripts/check_links.py`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^()\s]+(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`[^`]*`")


def pages() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "results").rglob("*.md")),
    ]


def broken(page: Path) -> list[str]:
    out = []
    fenced = False
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(CODE.sub("", line)):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = unquote(target.split("#", 1)[0])
            if path and not (page.parent / path).exists():
                out.append(f"{page.relative_to(ROOT)}:{n}: {target}")
    return out


def main() -> int:
    found = [line for page in pages() for line in broken(page)]
    print("\n".join(found)) if found else None
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
