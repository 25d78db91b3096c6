"""`compare` and `ab`'s report judge peak memory beside time: from folders of runs and from
pytest-benchmark saves, with the tolerance from the command line or a criteria file, the
summary line, the gates' exit statuses, and folders older than the memory columns."""

from __future__ import annotations

import json
import math

import pytest

from bench.cli.main import main
from bench.publish import compare
from tests import stored


def _side(folder, peaks, *, phases=True, **more):
    """One run folder per round (two), each of two cases (fp32 and bf16-amp), with `peaks[mode]`
    GiB (a list: one per round)."""
    for i in range(2):
        rows = []
        for mode in ("fp32", "bf16-amp"):
            row = stored.timing_row(mode=mode)
            peak = peaks[mode][i] if isinstance(peaks[mode], list) else peaks[mode]
            if peak is not None:
                row["peak_alloc_gib"] = peak
                row["peak_reserved_gib"] = peak + 0.5
                if phases:
                    row |= {"peak_fwd_gib": 1.0, "peak_bwd_gib": peak, "peak_opt_gib": 2.0}
                row |= more
            rows.append(row)
        stored.write_run(folder / f"run{i}", rows, seed=i)
    return folder


def test_a_rise_in_one_case_is_more_memory_and_the_summary_counts_it(tmp_path, capsys):
    a = _side(tmp_path / "A", {"fp32": 4.0, "bf16-amp": 3.0})
    b = _side(tmp_path / "B", {"fp32": 4.4, "bf16-amp": 3.0}, alloc_retries=0, ooms=0)
    table = compare.compare(a, b).set_index("mode")
    assert table.loc["fp32", "memory_verdict"] == "more memory"
    assert table.loc["fp32", "memory_change_pct"] == pytest.approx(10.0)
    assert table.loc["fp32", "memory_phase"] == "backward"
    assert table.loc["bf16-amp", "memory_verdict"] == "same memory"
    assert main(["compare", str(a), str(b), "--no-write"]) == 0  # no gate asked
    out = capsys.readouterr().out
    assert "; 1 more memory (+10%), 1 same memory." in out
    assert "| more memory | 4.000 → 4.400 " in out and "+409.6 MiB (+10%)" in out
    assert "the larger of 2 MiB and 1% of A's peak" in out
    assert main(["compare", str(a), str(b), "--no-write", "--fail-on-more-memory"]) == 1
    # A user's tolerance of 15%: the same memory, and the gate passes.
    args = ["compare", str(a), str(b), "--no-write", "--fail-on-more-memory"]
    assert main([*args, "--memory-tolerance", "15%"]) == 0
    assert "2 same memory." in capsys.readouterr().out


def test_a_criteria_file_gates_a_comparison_and_sets_its_tolerance(tmp_path, capsys):
    a = _side(tmp_path / "A", {"fp32": 4.0, "bf16-amp": 3.0})
    b = _side(tmp_path / "B", {"fp32": 4.4, "bf16-amp": 3.0})
    rules = tmp_path / "gate.toml"
    rules.write_text(
        '[[criterion]]\nname = "no case uses more memory"\ncomparison = true\n'
        "expect = \"memory_verdict != 'more memory'\"\n\n"
        '[[criterion]]\nname = "a run criterion"\nexpect = "total_ms > 0"\n'
    )
    assert main(["compare", str(a), str(b), "--no-write", "--criteria", str(rules)]) == 1
    out = capsys.readouterr().out
    assert (
        "FAIL no case uses more memory: 1 of 2 rows miss: mode=fp32 memory_verdict more memory"
        in out
    )
    assert "SKIP a run criterion: judges a run (ampbench check)" in out
    # The file's [memory] tolerance applies; --memory-tolerance overrides it.
    rules.write_text(rules.read_text() + '\n[memory]\ntolerance = "15%"\n')
    assert main(["compare", str(a), str(b), "--no-write", "--criteria", str(rules)]) == 0
    assert "PASS no case uses more memory" in capsys.readouterr().out
    given = ["--criteria", str(rules), "--memory-tolerance", "1%"]
    assert main(["compare", str(a), str(b), "--no-write", *given]) == 1
    # `check` of a run skips the comparison's criterion.
    assert main(["check", str(a / "run0"), "--criteria", str(rules)]) == 0
    assert "SKIP no case uses more memory: judges a comparison" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[memory]\ntolerance = "5GB"\n', "'5GB'"),
        ('[memory]\ntolerence = "1%"\n', "memory.tolerence"),
        ('[[criterion]]\nname = "x"\nexpect = "x"\ncomparison = "yes"\n', "'yes'"),
    ],
)
def test_a_bad_criteria_file_is_one_line(tmp_path, capsys, text, named):
    rules = tmp_path / "bad.toml"
    if not text.startswith("[["):
        text = '[[criterion]]\nname = "x"\ncomparison = true\nexpect = "ratio > 0"\n' + text
    rules.write_text(text)
    a = _side(tmp_path / "A", {"fp32": 4.0, "bf16-amp": 3.0})
    given = ["--no-write", "--criteria", str(rules)]
    assert main(["compare", str(a), str(a / "run0"), *given]) == 2
    assert named in capsys.readouterr().err


def test_rounds_that_differ_are_not_repeatable(tmp_path, capsys):
    a = _side(tmp_path / "A", {"fp32": 4.0, "bf16-amp": 3.0})
    b = _side(tmp_path / "B", {"fp32": [4.0, 4.5], "bf16-amp": 3.0})
    table = compare.compare(a, b).set_index("mode")
    assert table.loc["fp32", "memory_verdict"] == "memory not repeatable"
    text = compare.render(
        table.reset_index(), run_a=a, run_b=b, pair=None, min_effect=0.02, confidence=0.95,
        warnings=[],
    )  # fmt: skip
    assert "1 case(s) not repeatable: B's 2 rounds span 512 MiB (4 to 4.5 GiB)." in text


def test_old_folders_without_the_columns_get_no_memory_verdict(tmp_path, capsys):
    # Rows of a run from before the phase peaks and retries: the verdict stands on the peak.
    a = _side(tmp_path / "A", {"fp32": 4.0, "bf16-amp": 3.0}, phases=False)
    b = _side(tmp_path / "B", {"fp32": 4.4, "bf16-amp": 3.0})
    row = compare.compare(a, b).set_index("mode").loc["fp32"]
    assert row["memory_verdict"] == "more memory" and row["memory_phase"] == ""
    assert math.isnan(row["alloc_retries_a"])
    # No peaks at all (a CPU run, or older than the column): the table is time's alone.
    cpu = _side(tmp_path / "cpu", {"fp32": None, "bf16-amp": None})
    table = compare.compare(cpu, b)
    assert set(table["memory_verdict"]) == {"not measured"}
    assert main(["compare", str(cpu), str(b), "--no-write", "--fail-on-more-memory"]) == 0
    out = capsys.readouterr().out
    assert "Memory: no verdicts (A did not measure peak memory" in out
    assert "| memory " not in out and "memory not measured" not in out


def _save(path, peaks):
    benchmarks = [
        {"name": name, "stats": {"median": 1e-3, "data": [1e-3] * 4}, "extra_info": {
            "gpu": "NVIDIA H200", "peak_alloc_gib": peak}}
        for name, peak in peaks.items()
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": benchmarks}))
    return path


def test_pytest_benchmark_saves_compare_their_extra_info_peaks(tmp_path):
    a = _save(tmp_path / "0001_a.json", {"fp32-b8-step": 4.0, "bf16-amp-b8-step": 3.0})
    b = _save(tmp_path / "0002_b.json", {"fp32-b8-step": 4.2, "bf16-amp-b8-step": None})
    table = compare.compare(a, b).set_index("benchmark")
    assert table.loc["fp32-b8-step", "memory_verdict"] == "more memory"
    assert table.loc["bf16-amp-b8-step", "memory_verdict"] == "not measured"
    assert stored  # the fixtures' module, used above


@pytest.mark.parametrize(("tolerance", "status"), [(None, 1), ("15%", 0)])
def test_ab_judges_memory_with_the_tolerance_it_records(tolerance, status, tmp_path, monkeypatch):
    from bench.jobs import ab
    from bench.publish import ab as ab_report

    def job(cfg, *, results_dir, command, device, tag):
        folder = tmp_path / "cmp"
        _side(folder / "A", {"fp32": 4.0, "bf16-amp": 3.0})
        _side(folder / "B", {"fp32": 4.4, "bf16-amp": 3.0})
        record = {**cfg.record(), "commit_a": "a" * 40, "commit_b": "b" * 40}
        env = {"kind": "ab", "gpu": "cpu", "command": "python -m bench ab", "rounds": []}
        (folder / "env.json").write_text(json.dumps({**env, "ab_config": record}))
        return folder

    monkeypatch.setattr(ab, "run", job)
    argv = ["ab", "main", "HEAD", "--device", "cpu", "--fail-on-more-memory"]
    argv += ["--memory-tolerance", tolerance] if tolerance else []
    assert main([*argv, "--results-dir", str(tmp_path)]) == status
    report = (tmp_path / "cmp" / "report.md").read_text()
    said = "the larger of 0 MiB and 15% of A's peak" if tolerance else "2 MiB and 1%"
    assert said in report
    csv = (tmp_path / "cmp" / "verdicts.csv").read_text()
    assert ("more memory" in csv) == (tolerance is None)
    # A comparison folder from before the memory tolerance was recorded: the default.
    env = json.loads((tmp_path / "cmp" / "env.json").read_text())
    del env["ab_config"]["memory_tolerance"]
    (tmp_path / "cmp" / "env.json").write_text(json.dumps(env))
    table, _ = ab_report.write(tmp_path / "cmp")
    assert set(table["memory_verdict"]) == {"more memory", "same memory"}


def test_ab_refuses_a_bad_memory_tolerance_before_any_round(tmp_path, capsys):
    argv = ["ab", "HEAD", "HEAD", "--memory-tolerance", "5GB", "--results-dir", str(tmp_path)]
    assert main(argv) == 2
    assert "'5GB'" in capsys.readouterr().err and not list(tmp_path.iterdir())
