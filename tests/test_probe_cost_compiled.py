"""scripts/probe_cost_compiled.py: the probe's cost on a nanoGPT-like loop over fresh processes;
end to end at CPU size (two processes), its order of runs and its interval by hand."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from scipy import stats

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "probe_cost_compiled.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("probe_cost_compiled", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_rounds_interleave_the_variants_turning_the_order(script):
    plan = script.schedule(["bare", "probed", "probed-raw"], processes=3, diag_processes=1)
    assert plan == [
        (0, "bare"), (0, "probed"), (0, "probed-raw"),
        (1, "probed"), (1, "bare"),
        (2, "bare"), (2, "probed"),
    ]  # fmt: skip
    # The diagnostics' processes spread over the rounds, so each round has bare and probed.
    names = ["bare", "probed", "bare-tf32-off", "probed-raw", "probed-every-10"]
    plan = script.schedule(names, processes=3, diag_processes=2)
    assert [sum(1 for r, _ in plan if r == k) for k in range(3)] == [4, 4, 4]
    for k in range(3):
        assert {n for r, n in plan if r == k} >= {"bare", "probed"}
    assert all(sum(1 for _, n in plan if n == d) == 2 for d in names[2:])


def test_the_ratio_is_of_geometric_means_with_a_welch_interval_on_the_logs(script):
    # Logs 1 and 3 against 0 and 2: a difference of 1, each side's variance of the mean 1,
    # so a standard error of sqrt(2) on 2 degrees of freedom.
    r = script.ratio([math.e, math.e**3], [1.0, math.e**2])
    t = stats.t.ppf(0.975, 2)
    assert r["ratio"] == pytest.approx(math.e)
    assert r["low"] == pytest.approx(math.exp(1 - t * math.sqrt(2)))
    assert r["high"] == pytest.approx(math.exp(1 + t * math.sqrt(2)))
    one = script.ratio([2.0], [1.0, 1.0])  # one process a side: no interval
    assert one["ratio"] == pytest.approx(2.0) and math.isnan(one["low"])


def test_it_runs_bare_and_probed_processes_at_cpu_size_and_writes_its_table(script, tmp_path):
    out = tmp_path / "cost"
    argv = ["--tiny", "--device", "cpu", "--no-compile", "--iters", "3", "--warmup", "2",
            "--processes", "1", "--variants", "bare,probed", "--out", str(out)]  # fmt: skip
    assert script.main(argv) == 0
    records = [json.loads(line) for line in (out / "processes.jsonl").read_text().splitlines()]
    assert [r["variant"] for r in records] == ["bare", "probed"]
    bare, probed = records
    assert bare["status"] == probed["status"] == "ok" and bare["iters"] == 3
    # The probe ran as the driver would run it, and left the script's TF32 on.
    assert probed["probe_mode"] == "bf16-amp" and probed["tf32_in_loop"] is True
    assert bare["median_ms"] > 0 and probed["probe_total_ms"] > 0
    table = (out / "probe_cost.md").read_text()
    assert "| bare | no probe | 1 |" in table and "| probed |" in table
    summary = json.loads((out / "probe_cost.json").read_text())
    assert [v["variant"] for v in summary["variants"]] == ["bare", "probed"]


def test_bad_input_is_one_line_and_keeps_an_earlier_folder(script, tmp_path, capsys):
    assert script.main(["--variants", "bare,nope", "--out", str(tmp_path / "x")]) == 2
    assert "--variants 'bare,nope': choose from bare, probed" in capsys.readouterr().err
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "processes.jsonl").write_text("kept\n")
    assert script.main(["--device", "cpu", "--out", str(tmp_path / "old")]) == 2
    assert (tmp_path / "old" / "processes.jsonl").read_text() == "kept\n"
