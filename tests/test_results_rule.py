"""results/ holds results and their notes, never code (results/README.md states the rule): the
scripts that derived a figure from a run folder live in scripts/ and write into results/."""

from __future__ import annotations

import subprocess

from tests.optional import ROOT, not_a_checkout


def _files_under_results() -> list[str]:
    """What git tracks under results/; in a copy of the tree without git, the files there."""
    if not_a_checkout(ROOT):
        return [p.relative_to(ROOT).as_posix() for p in (ROOT / "results").rglob("*")]
    listed = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(ROOT), "ls-files", "-z", "results"],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout.split("\0")


def test_no_code_is_kept_under_results():
    code = [name for name in _files_under_results() if name.endswith(".py")]
    assert code == [], f"move these to scripts/ (results/README.md): {code}"
