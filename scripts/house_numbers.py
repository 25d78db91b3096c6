"""The house in numbers: bench/'s lines by package, and the share of them that produces text
(publish/, text/, and each study's report part as tests/test_layout.py's STUDIES names it).

Usage, from the repository root: `python scripts/house_numbers.py [REV]`; with REV (a commit), the
files as git holds them at REV, else the working tree. Lines are every line of a .py file."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_layout import STUDIES, _study_part  # noqa: E402

TEXT_PACKAGES = {"publish", "text"}


def files(rev: str | None) -> dict[str, int]:
    """Each bench/ .py file's module name and its number of lines."""
    if rev is None:
        paths = {p.relative_to(ROOT).as_posix(): p.read_text() for p in ROOT.glob("bench/**/*.py")}
    else:
        listed = subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", rev, "bench"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        paths = {
            p: subprocess.run(
                ["git", "show", f"{rev}:{p}"], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout
            for p in listed
            if p.endswith(".py")
        }
    return {p.removesuffix(".py").replace("/", "."): len(t.splitlines()) for p, t in paths.items()}


def produces_text(module: str) -> bool:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in TEXT_PACKAGES:
        return True
    # Before the studies had one shape their report parts were named otherwise: numerics'
    # render/ is the same name at both.
    return len(parts) > 2 and parts[1] in STUDIES and _study_part(module) == "report"


def main() -> None:
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    lines = files(rev)
    total = sum(lines.values())
    by_package = Counter()
    for module, n in lines.items():
        by_package[module.split(".")[1] if module.count(".") > 1 else "(top)"] += n
    text = sum(n for m, n in lines.items() if produces_text(m))
    print(f"bench/ at {rev or 'the working tree'}: {total} lines in {len(lines)} modules")
    for package, n in by_package.most_common():
        print(f"  {package:<11} {n:>6}")
    share = f"{text} lines, {text / total:.1%}"
    print(f"text-producing (publish/, text/, the studies' reports): {share}")


if __name__ == "__main__":
    main()
