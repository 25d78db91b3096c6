"""A run stopped part way, by Ctrl-C or by SIGTERM (an outer `timeout`): it keeps every finished
case, renders its report of them (naming the cases without a row and how to resume), and ends
with one line."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bench.cli import main
from bench.faults import Terminated
from bench.measure import runner
from bench.store import results

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--device", "cpu", "--modes", "fp32,bf16-amp", "--batch-sizes", "4,8"]
TINY += ["--optimizers", "fused", "--steps", "2", "--warmup", "0", "--no-overhead"]


def _stopped_on_third(monkeypatch, exc: type[BaseException]) -> None:
    real, calls = runner.run_case, []

    def stopped(plan, ceilings):
        calls.append(plan)
        if len(calls) == 3:
            raise exc
        return real(plan, ceilings)

    monkeypatch.setattr(runner, "run_case", stopped)


@pytest.mark.parametrize(
    ("exc", "status", "how"),
    [(Terminated, 143, "stopped (SIGTERM)"), (KeyboardInterrupt, 130, "interrupted")],
)
def test_a_stopped_run_renders_its_report_and_says_how_to_resume(
    tmp_path, capsys, monkeypatch, exc, status, how
):
    _stopped_on_third(monkeypatch, exc)
    assert main(["run", *TINY, "--results-dir", str(tmp_path)]) == status
    (run_dir,) = tmp_path.iterdir()
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"ampbench: {how}: 2 of 4 cases are kept in {run_dir}")
    assert last.endswith(f"finish with: ./run_bench.sh --resume {run_dir}")
    # The report and the table of what is there, naming the two cases without a row.
    assert (run_dir / results.CSV).is_file()
    text = (run_dir / results.REPORT).read_text()
    missing = results.read_env(run_dir)["missing_cases"]
    assert len(missing) == 2 and not set(missing) & set(results.load(run_dir)["case_id"])
    assert f"2 of 4 cases have no row: `{missing[0]}`, `{missing[1]}`." in text
    assert "`./run_bench.sh --resume RUN_DIR`" in text

    # A resume measures them and the report no longer says so.
    monkeypatch.undo()
    assert main(["run", "--resume", str(run_dir)]) == 0
    assert "missing_cases" not in results.read_env(run_dir)
    assert "stopped early" not in (run_dir / results.REPORT).read_text()


WORKER = textwrap.dedent(
    """
    import sys, time
    from bench.cli import main
    from bench.measure import runner

    real, calls = runner.run_case, []

    def slow_second(plan, ceilings):
        calls.append(plan)
        if len(calls) == 2:
            time.sleep(120)  # the test sends SIGTERM while this plan.case runs
        return real(plan, ceilings)

    runner.run_case = slow_second
    sys.exit(main(sys.argv[1:]))
    """
)


def test_sigterm_mid_run_leaves_a_report(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, "run", *TINY, "--results-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        rows = []
        while not rows and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            rows = [r for d in out.glob("*") for r in results.read_rows(d / results.ROWS)]
        assert rows, "the first case never finished"
        proc.send_signal(signal.SIGTERM)  # as `timeout` does
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    (run_dir,) = out.iterdir()
    assert (run_dir / results.REPORT).is_file() and (run_dir / results.CSV).is_file()
    assert "3 of 4 cases have no row" in (run_dir / results.REPORT).read_text()
    assert err.strip().splitlines()[-1].startswith("ampbench: stopped (SIGTERM): 1 of 4 cases")
