"""results/ holds results and their notes, never code (results/README.md states the rule): the
scripts that derived a figure from a run folder live in scripts/ and write into results/."""

from __future__ import annotations

import gzip
import json
import subprocess

import pytest

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


def _strict(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def test_every_committed_json_lines_file_is_strict_json():
    # What JavaScript's JSON.parse and jq accept: no NaN or Infinity (ampbench writes null).
    if not (ROOT / "results").is_dir():
        pytest.skip("no results/ in this copy of the tree")
    names = [n for n in _files_under_results() if n.endswith((".jsonl", ".jsonl.gz"))]
    assert names
    bad = []
    for name in names:
        data = (ROOT / name).read_bytes()
        text = (gzip.decompress(data) if name.endswith(".gz") else data).decode()
        for i, line in enumerate(text.splitlines(), start=1):
            try:
                json.loads(line, parse_constant=_strict)
            except ValueError as exc:
                bad.append(f"{name}:{i}: {exc}")
                break
    assert bad == [], f"run scripts/null_for_nan.py: {bad[:5]}"
