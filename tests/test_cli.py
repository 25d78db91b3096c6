"""The command line: bad input exits 2 with one line and leaves no folder; a tiny run end to end."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench import results
from bench.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["run", "--modes", "fp32,fp8"], "'fp8'"),
        (["run", "--preset", "huge"], "'huge'"),
        (["run", "--batch-sizes", "64,0"], "'0'"),
        (["run", "--batch-sizes", "abc"], "'abc'"),
        (["run", "--optimizers", "sgd"], "'sgd'"),
        (["run", "--steps", "-3"], "'-3'"),
        (["run", "--device", "tpu"], "'tpu'"),
        (["bogus"], "'bogus'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, tmp_path, capsys):
    code = main([*argv, "--results-dir", str(tmp_path)] if argv[0] == "run" else argv)
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
def test_cuda_request_without_gpu(tmp_path, capsys):
    assert main(["run", "--device", "cuda", "--results-dir", str(tmp_path)]) == 2
    assert "--device cuda" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_resume_refuses_grid_flags_and_missing_runs(tmp_path, capsys):
    assert main(["run", "--resume", str(tmp_path / "nope")]) == 2
    assert main(["run", "--resume", str(tmp_path), "--modes", "fp32"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "no env.json" in err[0] and "--modes" in err[1]


def _tiny_run(tmp_path, *extra):
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        [
            str(ROOT / "run_bench.sh"),
            "--device",
            "cpu",
            "--modes",
            "fp32,bf16-amp",
            "--batch-sizes",
            "4,8",
            "--steps",
            "3",
            "--warmup",
            "1",
            "--results-dir",
            str(tmp_path),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_run_bench_end_to_end_and_resume(tmp_path):
    proc = _tiny_run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert "CPU smoke run" in proc.stderr
    assert {p.name for p in run_dir.iterdir()} == {
        results.ROWS,
        results.SAMPLES,
        results.ENV,
        results.CSV,
        results.REPORT,
    }
    df = results.load(run_dir)
    assert len(df) == 8 and set(df["status"]) == {"ok"}
    env = results.read_env(run_dir)
    assert env["overhead"]["case_id"].startswith("bf16-amp/fused/b8")
    assert env["ceilings"]["copy_gbps"] > 0

    # Drop the last two cases as if the run had been killed, then resume it.
    lines = (run_dir / results.ROWS).read_text().splitlines()
    (run_dir / results.ROWS).write_text("\n".join(lines[:-2]) + "\n")
    proc = subprocess.run(
        [str(ROOT / "run_bench.sh"), "run", "--resume", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("[7/8]") == 1 and "[1/8]" not in proc.stderr
    assert len(results.load(run_dir)) == 8
    assert "resumed" in results.read_env(run_dir)
