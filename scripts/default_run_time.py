"""Where the default run's wall time went, from its committed folder and log alone (no GPU).

The run: results/20261203T130741Z_NVIDIA-H200_e5180fb (`./run_bench.sh`, its defaults: 162 cases,
30 steps a window, 5 warm-up steps, --repeats 3, the harness-overhead check), and its session log.
Sources, each figure's own:
- the command's wall time: the log's `== 1.` and `== run exit` stamps (whole seconds);
- started / ended: env.json (the folder opened; the last case and the overhead check written);
- each case's wall time: the difference of consecutive rows' `elapsed_s` (seconds since the
  suite began, when the row was written);
- timed windows: the sum of the case's `total` samples (device time of the timed steps);
- compile / capture: the row's `prepare_s`;
- warm-up: 5 steps at the case's median step (an estimate: warm-up steps are not timed);
- memory pass: 2 eager steps at the eager case's median (an estimate, as above);
- the rest of a case (build, freeing, first imports): its wall time less the above;
- the overhead check: its recorded samples plus its warm-up at the recorded medians.
Then a what-if over the same samples: the adaptive rule of docs/methodology.md (2 to 3
windows, stopping after 2 when they agree) on the first 30, 20 or 15 steps of each window, the
warm-up budgeted in time, and the command's wall time projected from those (not measured).

Run from the repository root: `PYTHONPATH=. python scripts/default_run_time.py`.
"""

import gzip
import json
import math
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import numpy as np

from bench.store import results

RUN = "results/20261203T130741Z_NVIDIA-H200_e5180fb"
LOG = "results/sessions/session_20261203T1307Z_h200_default_run.log.gz"
WARMUP, MEMORY_STEPS = 5, 2
# The rule being weighed (bench/measure/adaptive.py holds the one the harness runs).
NEW_STEPS, MIN_WINDOWS, MAX_WINDOWS, WARMUP_MS = 15, 2, 3, 50.0


def stamps() -> dict[str, int]:
    """Seconds of the day of the log's `== N. what (HH:MM:SS)` lines."""
    out = {}
    for line in gzip.decompress(Path(LOG).read_bytes()).decode().splitlines():  # kept packed
        m = re.match(r"== (.*) \((\d\d):(\d\d):(\d\d)\)", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4))
    return out


def seconds(iso: str) -> int:
    t = datetime.fromisoformat(iso)
    return t.hour * 3600 + t.minute * 60 + t.second


env = json.loads(Path(f"{RUN}/env.json").read_text())
# Through the store's reader: a published folder keeps both files gzip-packed.
rows = results.read_rows(Path(RUN) / results.ROWS)
samples = {r["case_id"]: r for r in results.read_rows(Path(RUN) / results.SAMPLES)}
log = stamps()
cmd_start, cmd_end = log["1. the default run"], log["run exit 0"]
started, ended = seconds(env["started"]), seconds(env["ended"])
suite_s = rows[-1]["elapsed_s"]

eager_ms = {
    (r["mode"], r["optimizer"], r["batch_size"]): r["total_ms"]
    for r in rows
    if r["variant"] == "eager" and r["status"] == "ok"
}
parts = ("wall", "timed", "prepare", "warmup", "memory", "rest")
by_group: dict[tuple, dict[str, float]] = defaultdict(lambda: dict.fromkeys(parts, 0.0))
count: dict[tuple, int] = defaultdict(int)
per_case = []
prev = 0.0
for r in rows:
    wall, prev = r["elapsed_s"] - prev, r["elapsed_s"]
    ok = r["status"] == "ok"
    timed = sum(samples[r["case_id"]]["samples_ms"]["total"]) / 1e3 if ok else 0.0
    prepare = float(r.get("prepare_s") or 0.0)
    warm = WARMUP * r["total_ms"] / 1e3 if ok else 0.0
    key3 = (r["mode"], r["optimizer"], r["batch_size"])
    memory = MEMORY_STEPS * eager_ms.get(key3, 0.0) / 1e3 if ok else 0.0
    rest = wall - timed - prepare - warm - memory
    g = (r["variant"], r["batch_size"])
    count[g] += 1
    for name, v in zip(parts, (wall, timed, prepare, warm, memory, rest), strict=True):
        by_group[g][name] += v
    per_case.append((wall, r["case_id"], timed, prepare, rest))

over_timed = over_warm = 0.0
for o in env["overhead"]:
    n = o["steps_per_window"]
    over_timed += sum(o["harness_samples_ms"]) / 1e3 + sum(o["bare_window_step_ms"]) * n / 1e3
    # 3 alternations: 5 warm-up steps of the harness, one warm-up window of the bare loop.
    over_warm += 3 * (WARMUP * o["harness_ms"] + n * o["bare_ms"]) / 1e3
before_and_builds = (ended - started) - suite_s - over_timed - over_warm

print(f"command wall time (log, `== 1.` to `== run exit`): {cmd_end - cmd_start} s")
print(f"env.json started -> ended: {ended - started} s")
print(f"  process start, environment probe (log start -> started): {started - cmd_start} s")
print(f"  the cases (suite, first case to last row written): {suite_s:.1f} s")
print(f"  overhead check, timed + warm-up: {over_timed + over_warm:.1f} s")
print(
    "  ceilings, CUDA start-up, overhead check's builds (what is left of started -> ended): "
    f"{before_and_builds:.1f} s"
)
print(f"  report rendering and exit (ended -> run exit): {cmd_end - ended} s")
print()
total = dict.fromkeys(parts, 0.0)
print(f"{'variant':>10} {'batch':>5} {'n':>3} " + " ".join(f"{p:>8}" for p in parts))
for g in sorted(by_group):
    v = by_group[g]
    print(f"{g[0]:>10} {g[1]:>5} {count[g]:>3} " + " ".join(f"{v[p]:8.1f}" for p in parts))
    for p in parts:
        total[p] += v[p]
print(f"{'all':>10} {'':>5} {len(rows):>3} " + " ".join(f"{total[p]:8.1f}" for p in parts))
print()
print("the ten slowest cases: wall, timed windows, compile/capture, rest (s)")
for wall, cid, timed, prepare, rest in sorted(per_case, reverse=True)[:10]:
    print(f"  {wall:6.1f} {timed:6.1f} {prepare:6.1f} {rest:6.1f}  {cid}")


# What-if: the same cases' samples cut to the new windows (the first `steps` steps of each
# recorded window), stopped by the rule the harness runs (bench.measure.adaptive.StopRule).
def what_if(steps: int) -> float:
    from bench.measure.adaptive import StopRule

    rule = StopRule(min_windows=MIN_WINDOWS, max_windows=MAX_WINDOWS)
    reasons: dict[str, int] = defaultdict(int)
    new_timed, moved = 0.0, []
    for r in rows:
        if r["status"] != "ok":
            continue
        rec = samples[r["case_id"]]["repeats_ms"]["total"]
        windows = [w[:steps] for w in rec[:MAX_WINDOWS]]
        for k in range(1, MAX_WINDOWS + 1):
            why = rule.stop(windows[:k])
            if why is not None:
                break
        reasons[f"{k} windows ({why})"] += 1
        kept = np.concatenate(windows[:k])
        new_timed += kept.sum() / 1e3
        moved.append(float(np.median(kept)) / r["total_ms"])
    m = np.asarray(moved)
    print(
        f"what-if, windows of {steps} steps, {MIN_WINDOWS} to {MAX_WINDOWS} by the rule: "
        f"timed windows {total['timed']:.1f} s -> {new_timed:.1f} s; "
        + ", ".join(f"{v} cases {k}" for k, v in sorted(reasons.items()))
    )
    print(
        "  median of the kept steps over the row's median: "
        f"{m.min():.4f} to {m.max():.4f} (median {np.median(m):.4f}; "
        f"{int((abs(m - 1) <= 0.005).sum())} of {len(m)} within 0.5%)"
    )
    return new_timed


print()
what_if(30)
what_if(20)
new_timed = what_if(NEW_STEPS)
# A projection, not a measurement: the command's wall time with the timed windows as above and
# the overhead check's windows (case.steps long) shorter by the same steps, all else as measured.
# The warm-up budgeted in time (bench.measure.timing.WARMUP_MS): steps until they pass it, at
# most WARMUP, at the case's median.
new_warm = sum(
    min(WARMUP, max(1, math.ceil(WARMUP_MS / r["total_ms"]))) * r["total_ms"] / 1e3
    for r in rows
    if r["status"] == "ok"
)
print(f"warm-up at most {WARMUP_MS:g} ms: {total['warmup']:.1f} s -> {new_warm:.1f} s")
over_new = (over_timed + over_warm) * NEW_STEPS / 30
projected = (
    (cmd_end - cmd_start)
    - total["timed"]
    + new_timed
    - total["warmup"]
    + new_warm
    - (over_timed + over_warm)
    + over_new
)
print(
    f"projected command wall time at {NEW_STEPS} steps, {MIN_WINDOWS} to {MAX_WINDOWS} windows, "
    f"the warm-up's budget (everything else as measured): {projected:.0f} s"
)
