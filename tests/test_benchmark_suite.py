"""The pytest-benchmark suite saves a self-contained JSON that pytest-benchmark can compare."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.ground import cards
from tests.benchmarks.conftest import _storage_problem
from tests.conftest import suite_options

ROOT = Path(__file__).resolve().parent.parent
SIZES = ["--ampbench-preset", "tiny", "--ampbench-batch-sizes", "8"]
"""Given, so that the benchmarks' names are the same on a GPU box as on the CPU."""


@pytest.fixture(scope="module")
def saves(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A storage with two saves of `./run_bench.sh pytest`, fp32 and bf16-amp, 2 rounds: 0001
    with foreach Adam, 0002 with fused. Made once: the compare gate's test takes a copy."""
    storage = tmp_path_factory.mktemp("saves")
    env = {**os.environ, "PYTHON": sys.executable, "AMPBENCH_BENCH_STORAGE": str(storage)}
    args = [*SIZES, "--ampbench-modes", "fp32,bf16-amp", "--ampbench-rounds", "2"]
    args += ["-q", "-p", "no:cacheprovider"]
    for optimizer in ("foreach", "fused"):
        proc = subprocess.run(
            [str(ROOT / "run_bench.sh"), "pytest", *args, "--ampbench-optimizer", optimizer],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return storage


def test_saved_runs_carry_extra_info_and_compare(saves):
    saved = sorted(saves.glob("*/*.json"))
    assert [p.name[:4] for p in saved] == ["0001", "0002"]
    data = json.loads(saved[0].read_text())
    names = {b["name"] for b in data["benchmarks"]}
    # The MLP alone by default (the CI gate's grid); its names are those of the saves made
    # before workloads existed.
    assert names == {
        f"test_train_step[{m}-b8-{p}]"
        for m in ("fp32", "bf16-amp")
        for p in ("forward", "backward", "optimizer", "step")
    }
    # Every round is kept (--benchmark-save-data), for `ampbench compare`.
    assert all(len(b["stats"]["data"]) == 2 for b in data["benchmarks"])
    info = data["benchmarks"][0]["extra_info"]
    assert {
        "mode",
        "batch_size",
        "phase",
        "optimizer",
        "tflops",
        "peak_alloc_gib",
        "gpu",
        "torch",
    } <= set(info)
    assert info["optimizer"] == "foreach"
    # The two saves hold the same benchmark names, so pytest-benchmark can compare them.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_benchmark",
            f"--storage=file://{saves}",
            "compare",
            "0001",
            "0002",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "bf16-amp-b8-step" in proc.stdout
    # ampbench compare reads the two saves: 2 rounds a side, the fewest the judge takes, judged.
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "compare", str(saved[0]), str(saved[1]), "--no-write"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| test_train_step[bf16-amp-b8-step] " in proc.stdout
    assert "**Too few rounds to judge**" not in proc.stdout
    # The summary line of the 8 cases' verdicts (`6 unclear, 2 slower.`, with `; 8 same memory`
    # on a GPU): 2 rounds a side are judged, so what it says depends on the machine's timings.
    line = re.search(r"^((\d+) (unclear|slower|faster|same)(, )?)+[.;]", proc.stdout, re.M)
    assert line and sum(map(int, re.findall(r"(\d+) (?:unclear|slower|faster|same)", line[0]))) == 8


def test_the_default_grid_is_the_gates_and_all_is_the_whole_grid():
    from tests.benchmarks import conftest as suite

    given = suite_options(_Config(models="all", modes="all"))
    assert given["models"] == list(cards.CARDS) and "fp8-rowwise" in given["modes"]
    assert suite.DEFAULT_MODELS == ("mlp",)
    assert suite.DEFAULT_MODES == ("fp32", "tf32", "fp16-amp", "bf16-amp")


def _pytest(storage: Path, *args: str, overflows: str = "") -> subprocess.CompletedProcess:
    """The suite as `./run_bench.sh pytest` runs it, without the script's start-up checks;
    `overflows`: the updates made to overflow (`tests/overflows.py`)."""
    save = [f"--benchmark-storage=file://{storage}", "--benchmark-save=test", "--benchmark-only"]
    suite = ["-p", "no:cacheprovider", "--ampbench-modes", "fp32", "--ampbench-rounds", "2"]
    pytest_ = [sys.executable, "-m", "pytest", "tests/benchmarks", "-m", "bench_suite", "-q"]
    # Its own session, as run_bench.sh makes it, also when this test runs in an xdist worker.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    if overflows:
        env["AMPBENCH_TEST_OVERFLOWS"] = overflows
        suite += ["-p", "tests.overflows"]
        # The updates are counted on the CPU: on a GPU float16's own overflows while the scale
        # settles would shift which update is which (seen on an H100).
        env["CUDA_VISIBLE_DEVICES"] = ""
    return subprocess.run(
        [*pytest_, *save, *suite, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )


class _Config:
    """What `suite_options` reads of a `pytest.Config`: the --ampbench-* options."""

    def __init__(self, **given: str) -> None:
        self.given = {"--ampbench-optimizer": "fused"} | {
            "--ampbench-" + k.replace("_", "-"): v for k, v in given.items()
        }

    def getoption(self, name: str) -> str | None:
        return self.given.get(name)


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("batch_sizes", "0", "'0'"),
        ("batch_sizes", "8,x", "'x'"),
        ("batch_sizes", "8,8", "'8' is listed twice"),
        ("rounds", "-1", "'-1'"),
        ("rounds", "x", "'x'"),
        ("optimizer", "sgd", "'sgd'"),
        ("modes", "fp32,fp99", "'fp99'"),
        ("phases", "step,loss", "'loss'"),
        ("phases", "step,step", "'step' is listed twice"),
        ("preset", "huge", "'huge'"),
    ],
)
def test_a_bad_suite_option_names_its_value(option, value, named):
    with pytest.raises(pytest.UsageError, match="--ampbench-" + option.replace("_", "-")) as err:
        suite_options(_Config(**{option: value}))
    assert named in str(err.value) and "\n" not in str(err.value)


def test_the_suite_options_parse():
    given = suite_options(
        _Config(models="gpt", modes="fp32,bf16-amp", phases="step", batch_sizes="8,16", rounds="3")
    )
    assert given == {
        "preset": None,
        "models": ["gpt"],
        "modes": ["fp32", "bf16-amp"],
        "phases": ["step"],
        "batch_sizes": [8, 16],
        "optimizer": "fused",
        "rounds": 3,
    }


def test_a_bad_suite_option_ends_pytest_in_one_line_before_any_test(tmp_path):
    proc = _pytest(tmp_path, "--ampbench-batch-sizes", "0")
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's status for bad usage
    assert proc.stderr.strip() == "ERROR: --ampbench-batch-sizes: '0' is not a positive integer"
    assert "passed" not in proc.stdout and "failed" not in proc.stdout


def test_a_storage_that_cannot_be_written_is_refused_before_the_suite(tmp_path):
    (tmp_path / "file").write_text("")
    proc = _pytest(tmp_path / "file" / "storage")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert f"{tmp_path / 'file'} is not a directory" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and "passed" not in proc.stdout


def test_a_read_only_storage_is_refused(tmp_path, monkeypatch):
    # Root writes a read-only folder anyway, so os.access says what a user would be told.
    storage = tmp_path / "storage"
    storage.mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != storage)
    assert _storage_problem(f"file://{storage}") == f"{storage} is not writable"
    assert _storage_problem(f"file://{tmp_path}") is None


def test_the_compare_fail_gate_ends_in_one_line_not_a_traceback(saves, tmp_path):
    # docs/comparing.md's gate: --ampbench-phases step --benchmark-compare-fail=median:3%
    gate = ["--benchmark-compare=0001", "--benchmark-compare-fail=median:3%", *SIZES]
    proc = _pytest(tmp_path / "empty", *gate)
    assert proc.returncode == 4, proc.stdout + proc.stderr  # nothing saved to compare with yet
    assert "found none in" in proc.stderr and "passed" not in proc.stdout
    # A save of every phase (the module's 0001, foreach Adam; the names leave the optimizer
    # out), made 1000 times faster, so that every benchmark has regressed against it.
    storage = Path(shutil.copytree(saves, tmp_path / "storage"))
    (saved,) = storage.glob("*/0001_*.json")
    data = json.loads(saved.read_text())
    for bench in data["benchmarks"]:
        bench["stats"] = {
            k: v / 1000 if k in ("min", "max", "mean", "median") else v
            for k, v in bench["stats"].items()
        }
    saved.write_text(json.dumps(data))
    # The documented gate times the step alone, against a save of every phase.
    proc = _pytest(storage, *gate, "--ampbench-phases", "step")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Performance has regressed" in out and "Traceback" not in out
    assert "--benchmark-compare-fail: performance has regressed" in out
    regressed = [s for s in out.splitlines() if "has failed PercentageRegressionCheck" in s]
    assert regressed and all("-step] " in line for line in regressed), regressed


SKIPPING = ["--ampbench-modes", "fp16-amp", "--ampbench-phases", "step", "--ampbench-rounds", "8"]
"""fp16 with its scaler, the whole step, 8 rounds of 2 steps after a warm-up round of 2: the
scale settles in the first 10 updates (none overflows), so update 10 is the warm-up's."""


def test_a_round_gradscaler_skipped_is_left_out_of_the_saved_rounds(tmp_path):
    # Updates 12 and 25 overflow: the first timed round (updates 12-13) and the seventh (24-25).
    proc = _pytest(tmp_path, *SKIPPING, "--benchmark-save-data", overflows="12,13")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (saved,) = tmp_path.glob("*/*.json")
    (bench,) = json.loads(saved.read_text())["benchmarks"]
    assert len(bench["stats"]["data"]) == bench["stats"]["rounds"] == 6
    assert bench["extra_info"]["skipped_rounds"] == 2


def test_a_benchmark_whose_every_timed_round_was_skipped_fails(tmp_path):
    # Every update from the warm-up's on overflows: no timed round applied its update.
    proc = _pytest(tmp_path, *SKIPPING, overflows="10,0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "GradScaler skipped every one of the 8 timed rounds" in proc.stdout
