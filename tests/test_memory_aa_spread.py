"""scripts/memory_aa_spread.py: the A/A spread of peak memory between processes of one commit,
from run folders (grouped by commit and grid) and pytest-benchmark saves the test writes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.stored import timing_row, write_run

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "memory_aa_spread.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("memory_aa_spread", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(folder: Path, peak: float, *, commit: str = "a" * 40, batch: int = 8) -> None:
    row = timing_row(mode="fp32", batch_size=batch) | {"peak_alloc_gib": peak}
    write_run(folder, [row], gpu="Test GPU", commit=commit)


def test_the_spread_is_per_commit_grid_and_case(script, tmp_path):
    _run(tmp_path / "r1", 4.0)
    _run(tmp_path / "r2", 4.0)
    _run(tmp_path / "r3", 4.0 + 2 / 1024)  # a third process of the same commit: 2 MiB higher
    _run(tmp_path / "other-commit", 9.0, commit="b" * 40)  # alone in its group: no row
    save = {"commit_info": {"id": "c" * 40}, "benchmarks": [
        {"name": "step", "extra_info": {"peak_alloc_gib": 1.5, "gpu": "Test GPU"}}]}  # fmt: skip
    for i in (1, 2):
        (tmp_path / f"000{i}_c.json").write_text(json.dumps(save))
    assert script.main([str(tmp_path), str(tmp_path / "out")]) == 0
    table = script.spread(script._run_peaks(tmp_path) + script._save_peaks(tmp_path))
    rows = table.set_index("case")
    assert len(table) == 2 and rows.loc["step", "spread_mib"] == 0
    run_row = rows.drop(index="step").iloc[0]
    assert run_row["processes"] == 3 and run_row["spread_mib"] == pytest.approx(2.0)
    text = (tmp_path / "out" / "spread.md").read_text()
    assert "1 of 2 had the same peak allocated memory to the byte" in text
    assert "the largest spread was 2 MiB" in text
