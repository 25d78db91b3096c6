"""One home for verdicts: measuring keeps sample statistics only, the rounds judge lives in
`bench.verdicts`, and planning a case (`bench.execution.variants`) imports no pandas."""

import subprocess
import sys
from pathlib import Path

from bench.measure import stats

ROOT = Path(__file__).resolve().parent.parent


def test_measuring_keeps_no_verdict():
    for name in ("rounds_verdict", "holm", "family_verdicts", "rounds_needed", "MIN_EFFECT"):
        assert not hasattr(stats, name), name


def test_planning_a_case_imports_no_pandas():
    probe = "import sys, bench.execution.variants; print('pandas' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stdout + done.stderr
