"""`bench check RUN --criteria FILE`: one PASS/FAIL/SKIP line per criterion of a TOML file, exit 1
on any failure and 2 on bad input, from run folders written here (never the repo's results/)."""

import subprocess
import sys
import textwrap

import pytest

from bench.cli import main
from bench.store import paths, results
from bench.verdicts import criteria_file
from tests.stored import small_grid, timing_row, write_run

# small_grid at batch 32, fused Adam: fp32 36 ms, tf32 18 ms, bf16-amp 12 ms; every row is at
# 60% of its floor.
BF16_32 = "mode == 'bf16-amp' and optimizer == 'fused' and batch_size == 32"


def toml(tmp_path, text: str, name: str = "criteria.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def run(tmp_path):
    oom = {**timing_row(mode="fp32", batch_size=64), "status": "oom", "total_ms": None}
    return write_run(tmp_path / "run", [*small_grid(), oom], gpu="NVIDIA H200")


def check(run, path, capsys):
    code = main(["check", str(run), "--criteria", str(path)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.strip().splitlines()


def test_a_met_criterion_passes_with_its_value(run, tmp_path, capsys):
    path = toml(
        tmp_path,
        f"""
        [[criterion]]
        name = "bf16 fast"
        where = "{BF16_32}"
        expect = "total_ms <= 12.5 and pct_of_floor >= 60"
        """,
    )
    code, out, err = check(run, path, capsys)
    assert code == 0 and err == []
    assert out == [
        "PASS bf16 fast: total_ms 12.00, pct_of_floor 60.00 (expect total_ms <= 12.5 and "
        "pct_of_floor >= 60)",
        "1 passed, 0 failed",
    ]


def test_a_missed_criterion_fails_and_lists_the_rows_that_miss(run, tmp_path, capsys):
    path = toml(
        tmp_path,
        """
        [[criterion]]
        name = "fused is fast"
        where = "optimizer == 'fused' and batch_size == 32"
        expect = "total_ms < 20"

        [[criterion]]
        name = "fp32 speedup"
        where = "mode == 'bf16-amp' and batch_size == 8"
        expect = "speedup_vs_fp32 >= 3"
        """,
    )
    code, out, _ = check(run, path, capsys)
    assert code == 1
    assert out[0] == (
        "FAIL fused is fast: 1 of 3 rows miss: mode=fp32 total_ms 36.00 "
        "(expect total_ms < 20 in every row)"
    )
    # Speedups exist as columns: fp32 over bf16-amp is 3 at batch 8 for both Adams.
    assert out[1].startswith("PASS fp32 speedup: optimizer=foreach speedup_vs_fp32 3.000; ")
    assert out[-1] == "1 passed, 1 failed"


def test_require_any_passes_on_the_best_row(run, tmp_path, capsys):
    any_row = """
        [[criterion]]
        name = "some mode under 15 ms"
        where = "optimizer == 'fused' and batch_size == 32"
        expect = "total_ms < 15"
        require = "any"
        """
    code, out, _ = check(run, toml(tmp_path, any_row), capsys)
    assert code == 0
    assert out[0] == (
        "PASS some mode under 15 ms: mode=bf16-amp total_ms 12.00 "
        "(expect total_ms < 15 in some row)"
    )
    code, out, _ = check(run, toml(tmp_path, any_row.replace("< 15", "< 10")), capsys)
    assert code == 1 and out[0].startswith("FAIL some mode under 15 ms: mode=fp32 total_ms 36.00;")


def test_no_row_matching_fails_unless_told_to_skip(run, tmp_path, capsys):
    text = """
        [[criterion]]
        name = "batch 4096"
        where = "batch_size == 4096"
        expect = "pct_of_floor >= 80"
        """
    code, out, _ = check(run, toml(tmp_path, text), capsys)
    assert code == 1
    assert out == [
        "FAIL batch 4096: no row matches (where batch_size == 4096)",
        "0 passed, 1 failed",
    ]
    code, out, _ = check(run, toml(tmp_path, text + 'if_missing = "skip"\n'), capsys)
    assert code == 0
    assert out[-1] == "0 passed, 0 failed, 1 skipped" and out[0].startswith("SKIP batch 4096:")


def test_a_chosen_row_that_did_not_pass_fails_with_its_status(run, tmp_path, capsys):
    path = toml(
        tmp_path,
        """
        [[criterion]]
        name = "fp32 at 64"
        where = "mode == 'fp32' and batch_size == 64"
        expect = "pct_of_floor >= 0"

        [[criterion]]
        name = "every fp32"
        where = "mode == 'fp32'"
        expect = "pct_of_floor >= 0"
        """,
    )
    code, out, _ = check(run, path, capsys)
    assert code == 1
    assert out[0] == "FAIL fp32 at 64: status oom"
    assert (
        out[1] == "FAIL every fp32: 1 of 5 rows not ok: optimizer=foreach batch_size=64 status oom"
    )


def test_a_criterion_for_another_gpu_is_skipped(run, tmp_path, capsys):
    path = toml(
        tmp_path,
        f"""
        [[criterion]]
        name = "on an A100"
        gpu = "a100"
        where = "{BF16_32}"
        expect = "total_ms < 1"

        [[criterion]]
        name = "on an H200"
        gpu = "h200"
        where = "{BF16_32}"
        expect = "total_ms < 1"
        """,
    )
    code, out, _ = check(run, path, capsys)
    assert out[0] == "SKIP on an A100: run on NVIDIA H200, criterion is for a100"
    assert out[1].startswith("FAIL on an H200: total_ms 12.00")  # the match ignores case
    assert out[2] == "0 passed, 1 failed, 1 skipped" and code == 1


def test_a_ratio_of_two_selections(run, tmp_path, capsys):
    path = toml(
        tmp_path,
        """
        [[criterion]]
        name = "bf16 over the best of fp32 and tf32"
        where = "optimizer == 'fused' and batch_size == 32"
        ratio.numerator = "mode in ['fp32', 'tf32']"
        ratio.denominator = "mode == 'bf16-amp'"
        ratio.column = "total_ms"
        ratio.reduce = "min"
        expect = "ratio >= 1.5"

        [[criterion]]
        name = "no reduce over several rows"
        where = "optimizer == 'fused' and batch_size == 32"
        ratio.numerator = "mode != 'bf16-amp'"
        ratio.denominator = "mode == 'bf16-amp'"
        ratio.column = "total_ms"
        expect = "ratio >= 1"
        """,
    )
    code, out, _ = check(run, path, capsys)
    assert out[0] == (
        "PASS bf16 over the best of fp32 and tf32: ratio 1.500 = total_ms 18.00 (mode=tf32) / "
        "12.00 (mode=bf16-amp) (expect ratio >= 1.5)"
    )
    assert out[1] == (
        "FAIL no reduce over several rows: the numerator matches 2 rows; give ratio.reduce"
    )
    assert code == 1


def test_an_env_value(tmp_path, capsys):
    run = write_run(tmp_path / "run", small_grid())
    env = results.read_env(run)
    env["overhead"] = {"overhead_pct": -2.5}
    results.write_env(run, env)
    text = """
        [[criterion]]
        name = "overhead"
        env = "overhead.overhead_pct"
        expect = "abs(overhead_pct) <= {limit}"
        """
    code, out, _ = check(run, toml(tmp_path, text.format(limit=3)), capsys)
    assert (
        code == 0 and out[0] == "PASS overhead: overhead_pct -2.500 (expect abs(overhead_pct) <= 3)"
    )
    code, out, _ = check(run, toml(tmp_path, text.format(limit=2)), capsys)
    assert code == 1 and out[0].startswith("FAIL overhead: overhead_pct -2.500")
    env["overhead"] = {"error": "not measured in a run of several ranks"}
    results.write_env(run, env)
    code, out, _ = check(run, toml(tmp_path, text.format(limit=2)), capsys)
    assert out[0] == (
        "FAIL overhead: env.json has no overhead.overhead_pct (overhead: not measured in a run "
        "of several ranks)"
    )


def test_an_env_list_gives_one_row_per_entry(tmp_path, capsys):
    # Newer folders keep one overhead measurement per case, and the error of one that failed.
    run = write_run(tmp_path / "run", small_grid())
    env = results.read_env(run)
    env["overhead"] = [
        {"case_id": "a/b8", "overhead_pct": 1.5},
        {"case_id": "a/b32", "overhead_pct": -0.5},
    ]
    results.write_env(run, env)
    text = """
        [[criterion]]
        name = "overhead"
        env = "overhead.overhead_pct"
        expect = "abs(overhead_pct) <= 1"
        """
    code, out, _ = check(run, toml(tmp_path, text), capsys)
    assert code == 1
    assert out[0] == (
        "FAIL overhead: 1 of 2 rows miss: case_id=a/b8 overhead_pct 1.500 "
        "(expect abs(overhead_pct) <= 1 in every row)"
    )
    env["overhead"][0] = {"case_id": "a/b8", "error": "RuntimeError: boom"}
    results.write_env(run, env)
    code, out, _ = check(run, toml(tmp_path, text), capsys)
    assert out[0] == (
        "FAIL overhead: 1 of 2 rows not ok: case_id=a/b8 status not measured "
        "(overhead: RuntimeError: boom)"
    )
    code, out, _ = check(run, toml(tmp_path, text + "where = \"case_id == 'a/b32'\"\n"), capsys)
    assert code == 0 and out[0] == (
        "PASS overhead: overhead_pct -0.5000 (expect abs(overhead_pct) <= 1)"
    )
    env["overhead"] = [{"error": "no eager case in the grid"}]
    results.write_env(run, env)
    code, out, _ = check(run, toml(tmp_path, text + 'if_missing = "skip"\n'), capsys)
    assert code == 0 and out[0] == (
        "SKIP overhead: env.json has no overhead.overhead_pct (overhead: no eager case in the grid)"
    )


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("[[criterion]\nname = 'x'", "is not valid TOML"),
        ("[[criteria]]\nname = 'x'\nexpect = 'total_ms > 0'", "unknown key 'criteria'"),
        ("[[criterion]]\nname = 'x'", "criterion 1 ('x'): no 'expect'"),
        (
            "[[criterion]]\nname = 'x'\nexpect = 'total_ms > 0'\nexepct = 'y'",
            "unknown key 'exepct'",
        ),
        ("[[criterion]]\nname = 'x'\nexpect = 'total_ms > 0'\nrequire = 'most'", "'most'"),
        ("[[criterion]]\nname = 'x'\nexpect = 'pct_floor >= 80'", "unknown column 'pct_floor'"),
        ("[[criterion]]\nname = 'x'\nwhere = 'moed == 1'\nexpect = 'total_ms > 0'", "'moed'"),
        ("[[criterion]]\nname = 'x'\nexpect = 'total_ms >='", "bad expect expression"),
        ("[[criterion]]\nname = 'x'\nexpect = 'total_ms'", "does not give True or False"),
        ("[[criterion]]\nname = 'x'\nwhere = 'batch_size'\nexpect = 'total_ms > 0'", "where"),
        (
            "[[criterion]]\nname = 'x'\nexpect = 'ratio > 1'\n"
            "ratio = {numerator = 'mode == 1', denominator = 'mode == 2', column = 'total_sm'}",
            "unknown column 'total_sm' in ratio",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_it(run, tmp_path, capsys, body, needle):
    code, out, err = check(run, toml(tmp_path, body), capsys)
    assert code == 2 and out == []
    assert len(err) == 1 and err[0].startswith("ampbench: error: ") and needle in err[0]


def test_a_bad_expression_is_named_even_where_the_gpu_differs(run, tmp_path, capsys):
    path = toml(
        tmp_path,
        "[[criterion]]\nname = 'x'\ngpu = 'A100'\nwhere = 'batch_size == 8'\nexpect = 'tflps > 1'",
    )
    code, _, err = check(run, path, capsys)
    assert code == 2 and "unknown column 'tflps'" in err[0] and "did you mean tflops" in err[0]


def test_a_missing_folder_or_file_exits_2(run, tmp_path, capsys):
    good = toml(tmp_path, "[[criterion]]\nname = 'x'\nexpect = 'total_ms > 0'")
    code, _, err = check(tmp_path / "nowhere", good, capsys)
    assert code == 2 and len(err) == 1 and "nowhere" in err[0]
    code, _, err = check(run, tmp_path / "absent.toml", capsys)
    assert code == 2 and err == [
        f"ampbench: error: criteria file {tmp_path / 'absent.toml'}: no such file"
    ]


def test_the_module_entry_point_gives_the_exit_codes(run, tmp_path):
    def status(expect: str) -> subprocess.CompletedProcess:
        body = f"[[criterion]]\nname = 'x'\nwhere = \"status == 'ok'\"\nexpect = '{expect}'"
        path = toml(tmp_path, body)
        argv = [sys.executable, "-m", "bench", "check", str(run), "--criteria", str(path)]
        return subprocess.run(argv, cwd=paths.ROOT, capture_output=True, text=True, check=False)

    passed, failed, bad = status("total_ms > 0"), status("total_ms > 1000"), status("nope > 0")
    assert (passed.returncode, failed.returncode, bad.returncode) == (0, 1, 2)
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_a_file_with_no_criterion_is_refused(tmp_path):
    with pytest.raises(criteria_file.CriteriaError, match="no \\[\\[criterion\\]\\]"):
        criteria_file.read(toml(tmp_path, "# nothing yet\n"))


def test_the_sizes_are_chosen_as_a_case_id_spells_them(run, tmp_path, capsys):
    path = toml(
        tmp_path,
        f"""
        [[criterion]]
        name = "tiny mlp"
        where = "{BF16_32} and sizes == '32x64x10'"
        expect = "total_ms <= 12.5"
        """,
    )
    code, out, err = check(run, path, capsys)
    assert code == 0 and err == [] and out[0].startswith("PASS tiny mlp: total_ms 12.00")
