"""The pytest-benchmark suite saves a self-contained JSON that pytest-benchmark can compare."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_saved_runs_carry_extra_info_and_compare(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "AMPBENCH_BENCH_STORAGE": str(tmp_path)}
    # The sizes are given, so that the names are the same on a GPU box as on the CPU.
    args = [
        "--ampbench-preset",
        "tiny",
        "--ampbench-batch-sizes",
        "8",
        "--ampbench-modes",
        "fp32,bf16-amp",
        "--ampbench-rounds",
        "2",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
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
    saved = sorted(tmp_path.glob("*/*.json"))
    assert [p.name[:4] for p in saved] == ["0001", "0002"]
    data = json.loads(saved[0].read_text())
    names = {b["name"] for b in data["benchmarks"]}
    assert names == {
        f"test_train_step[{m}-b8-{p}]"
        for m in ("fp32", "bf16-amp")
        for p in ("forward", "backward", "optimizer", "step")
    }
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
            f"--storage=file://{tmp_path}",
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
