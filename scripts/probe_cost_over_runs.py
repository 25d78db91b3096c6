"""The probe's cost at `time_every=10` on a loop the host bounds (the GPT at batch 64), over runs:
each committed run's paired ratio (the geometric mean over its rounds of the probed window's step
time over the bare one's), then their geometric mean over the runs with a t interval of 95%, so
that how far one process differs from the next is part of the spread.

    python scripts/probe_cost_over_runs.py

reads every results/own-loop-h200/overhead*/**/overhead.json whose run was not an A/A control
and not hooks-only, at batch 64 and `time_every=10`, and writes probe_cost_over_runs.json and
probe_cost_over_runs.md into results/own-loop-h200/.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "results" / "own-loop-h200"
CONFIDENCE = 0.95


def runs() -> list[tuple[str, float]]:
    """(overhead.json's path under FOLDER, mean log ratio of its rounds) of each run counted."""
    out = []
    for path in sorted(FOLDER.glob("overhead*/**/overhead.json")):
        r = json.loads(path.read_text())
        if r["batch_size"] != 64 or r.get("time_every", 1) != 10:
            continue
        if r.get("control") or r.get("hooks_only"):
            continue
        pairs = zip(r["probed_step_ms"], r["bare_step_ms"], strict=True)
        logs = [math.log(probed / bare) for probed, bare in pairs]
        out.append((path.relative_to(FOLDER).as_posix(), statistics.mean(logs)))
    return out


def main() -> None:
    counted = runs()
    logs = [m for _, m in counted]
    n = len(logs)
    mean = statistics.mean(logs)
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    result = {
        "runs": [{"file": f, "ratio": math.exp(m)} for f, m in counted],
        "ratio": math.exp(mean),
        "low": math.exp(mean - half),
        "high": math.exp(mean + half),
        "confidence": CONFIDENCE,
    }
    (FOLDER / "probe_cost_over_runs.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# The probe's cost at `time_every=10`, batch 64, over runs",
        "",
        "Made by `python scripts/probe_cost_over_runs.py` from the committed overhead.json files: "
        "each run's paired ratio, their geometric mean over the runs and its 95% t interval.",
        "",
        f"**{(result['ratio'] - 1) * 100:+.1f}%** over {n} runs, 95% interval "
        f"[{(result['low'] - 1) * 100:+.1f}%, {(result['high'] - 1) * 100:+.1f}%].",
        "",
        "| run | with the probe over without |",
        "|---|---|",
        *(f"| [{r['file']}]({r['file']}) | {r['ratio']:.4g} |" for r in result["runs"]),
        "",
    ]
    (FOLDER / "probe_cost_over_runs.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
