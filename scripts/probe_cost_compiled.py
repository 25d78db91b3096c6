"""What the probe costs a compiled loop like nanoGPT's train.py at its shakespeare-char settings,
timed by the loop's own wall clock, over fresh processes.

The loop is nanoGPT's (train.py, MIT): the GPT at `shakespeare-char` size (ampbench's
`bench.workloads.gpt` preset: 6 layers, 6 heads, 384 wide, context 256, vocabulary 65, tied, no
biases, dropout 0.2; its GELU is the tanh one and its initialisation PyTorch's, neither of which
changes the work), the loss computed inside the compiled module, `torch.compile`, bf16 autocast,
TF32 switched on by the script, fused AdamW with nanoGPT's weight-decay groups and cosine
schedule, batch 64 of the bundled Shakespeare text drawn on the host and copied pinned and
non-blocking after the forward, clip_grad_norm_ 1.0, `zero_grad(set_to_none=True)`. Each
iteration's time is the wall clock between the ends of two iterations (nanoGPT's `dt`), and
the loss is read (`.item()`, a sync) every 10 iterations only, as nanoGPT logs. No evaluation.

Variants (`VARIANTS`): `bare` (no probe) and `probed` (the probe as docs/own-loop.md tells users:
`bench.probe(model, optimizer, scaler=...)`, `probe.autocast()`, `with probe.step():`,
`probe.log(loss=...)`, under `AMPBENCH_MODE=bf16-amp`), and diagnostics that change one thing
each, so that one GPU call can tell what a cost comes from.

    python scripts/probe_cost_compiled.py --out OUT [--processes 5] [--diag-processes 2]
        [--variants bare,probed,...] [--iters 300] [--warmup 30] [--budget-s 450]

runs fresh processes (`--one`) in interleaved rounds (`schedule`): `bare` and `probed`
`--processes` times each, one of each a round, and each diagnostic `--diag-processes` times,
spread over the rounds; the order turns each round; no process starts that would end past
`--budget-s`. It writes OUT/processes.jsonl
(one line a process), OUT/processes.log (their output) and OUT/probe_cost.md (each process's
median iteration ms, and per variant the geometric mean over its processes and its ratio to
`bare` with a 95% Welch t interval on the log medians: a process is the unit), and prints the
table. `--tiny --device cpu --no-compile` runs it at CPU size in seconds (the tests do).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODE = "bf16-amp"
LOG_INTERVAL = 10
"""nanoGPT's `log_interval`: the loss is read (a sync) every 10 iterations."""
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Variant:
    name: str
    what: str
    probe: bool = False
    tf32_off: bool = False
    """TF32 switched off after the script switched it on (what the probe did for bf16-amp)."""
    hooks: bool = True
    """The probe's hooks stay on (`probe.detach()` removes them)."""
    step: bool = True
    """The loop runs inside `with probe.step():`."""
    flops: bool = True
    """The probe counts the first step's FLOPs (FlopCounterMode); off: `flops=` is handed in."""
    time_every: int = 1
    census: bool = True
    raw: bool = False
    """The probe gets the module before `torch.compile` (its hooks on the inner module)."""
    reuse_events: bool = True
    """Off: a new CUDA event for every mark (`CudaClock`), as the probe made them before."""


VARIANTS = {
    v.name: v
    for v in (
        Variant("bare", "no probe"),
        Variant("probed", "the probe as docs/own-loop.md tells users", probe=True),
        Variant("bare-tf32-off", "no probe, TF32 switched off after the script set it on",
                tf32_off=True),
        Variant("probed-tf32-off", "probed, TF32 switched off after the probe was made",
                probe=True, tf32_off=True),
        Variant("probed-hooks-only", "the probe's hooks, no `probe.step()`", probe=True,
                step=False),
        Variant("probed-no-hooks", "`probe.step()`, the hooks removed", probe=True, hooks=False),
        Variant("probed-flops-given", "probed, FLOPs handed in (no FlopCounterMode step)",
                probe=True, flops=False),
        Variant("probed-every-10", "probed at `time_every=10`", probe=True, time_every=10),
        Variant("probed-no-census", "probed with `census=False`", probe=True, census=False),
        Variant("probed-raw", "probed, the probe given the module before `torch.compile`",
                probe=True, raw=True),
        Variant("probed-new-events", "probed, a new CUDA event for every mark", probe=True,
                reuse_events=False),
    )
}  # fmt: skip
PRIMARY = ("bare", "probed")
DEFAULT = (
    "bare", "probed", "bare-tf32-off", "probed-tf32-off", "probed-hooks-only",
    "probed-every-10", "probed-raw",
)  # fmt: skip


# One process: nanoGPT's loop.
def _text_ids():
    import numpy as np

    from bench.data.sources import FILES, read_text

    text = read_text(FILES / "tinyshakespeare.txt")
    lookup = {c: i for i, c in enumerate(sorted(set(text)))}
    ids = np.array([lookup[c] for c in text], dtype=np.uint16)
    return ids[: int(len(ids) * 0.9)], len(lookup)  # nanoGPT's train split


def _optimizer(model, device: str):
    import torch

    # nanoGPT's configure_optimizers: weight decay on the matrices, none on the rest; fused
    # AdamW on CUDA.
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.99), fused=device == "cuda")


def _lr(it: int) -> float:
    """nanoGPT's shakespeare-char schedule: 100 warm-up iterations, cosine to 1e-4 at 5000."""
    if it < 100:
        return 1e-3 * (it + 1) / 101
    ratio = min((it - 100) / 4900, 1.0)
    return 1e-4 + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (1e-3 - 1e-4)


def one(variant: Variant, args: argparse.Namespace) -> dict:
    """Run the loop once in this process; its figures as a flat dict (units in the keys)."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    import bench
    from bench.ownloop import contract
    from bench.store import results
    from bench.workloads.gpt import GPT, PRESETS

    device = args.device
    os.environ.pop(contract.OUT, None)
    for name in (contract.MODE, contract.OLD_MODE):
        os.environ.pop(name, None)
    if variant.probe:
        os.environ[contract.MODE] = MODE
    torch.manual_seed(1337)
    # nanoGPT's train.py switches TF32 on for the whole script.
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    train, vocab = _text_ids()
    size = PRESETS["shakespeare-tiny" if args.tiny else "shakespeare-char"]
    block, batch = size.context, args.batch or (4 if args.tiny else 64)

    def get_batch():
        ix = np.random.randint(0, len(train) - block, (batch,))
        x = torch.stack([torch.from_numpy(train[i : i + block].astype(np.int64)) for i in ix])
        y = torch.stack(
            [torch.from_numpy(train[i + 1 : i + 1 + block].astype(np.int64)) for i in ix]
        )
        if device == "cuda":
            return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(
                device, non_blocking=True
            )
        return x.to(device), y.to(device)

    class WithLoss(nn.Module):
        """nanoGPT's GPT returns (logits, loss): the loss is inside the compiled module."""

        def __init__(self) -> None:
            super().__init__()
            self.gpt = GPT(size)

        def forward(self, idx, targets):
            logits = self.gpt(idx)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    assert vocab == size.vocab, (vocab, size.vocab)
    np.random.seed(1337)
    raw = WithLoss().to(device)
    optimizer = _optimizer(raw, device)
    model = torch.compile(raw) if args.compile else raw
    probe = None
    probe_dir = Path(tempfile.mkdtemp(prefix="probe_cost_"))
    if variant.probe:
        probe = bench.probe(
            raw if variant.raw else model, optimizer, scaler=None, out=probe_dir / "run",
            census=variant.census, time_every=variant.time_every,
            flops=None if variant.flops else 1, ceilings=False,  # ceilings: at close, untimed
        )  # fmt: skip
        scaler = probe.scaler()
        ctx = probe.autocast()
        if not variant.hooks:
            probe.detach()
        if not variant.reuse_events and device == "cuda":
            from bench.measure.timing import CudaClock

            probe.clock = CudaClock()
    else:
        # nanoGPT's: a GradScaler enabled only for float16, its autocast context.
        scaler = torch.amp.GradScaler(device, enabled=False)
        ctx = torch.autocast(device, dtype=torch.bfloat16)
    if variant.tf32_off:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
    stepping = probe is not None and variant.step

    def counters() -> dict[str, int]:
        try:
            from torch._dynamo.utils import counters as c
        except ImportError:  # pragma: no cover - a torch without dynamo
            return {}
        return {
            "graphs": int(c["stats"].get("unique_graphs", 0)),
            "graph_breaks": int(sum(c["graph_break"].values())),
            "frames_ok": int(c["frames"].get("ok", 0)),
        }

    times_ms: list[float] = []
    item_wait_ms: list[float] = []
    started = time.perf_counter()
    warm_counters: dict[str, int] = {}
    x, y = get_batch()
    t0 = time.perf_counter()
    for it in range(args.warmup + args.iters):
        if it == args.warmup:
            warm_counters = counters()
            warm_up_s = time.perf_counter() - started
        lr = _lr(it)
        for group in optimizer.param_groups:
            group["lr"] = lr
        with probe.step() if stepping else contextlib.nullcontext():
            with ctx:
                _logits, loss = model(x, y)
            x, y = get_batch()  # the next batch, drawn while the GPU runs the forward
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        if probe is not None:
            probe.log(loss=loss.detach())  # as docs/own-loop.md shows: read later, not now
        t1 = time.perf_counter()
        dt, t0 = t1 - t0, t1
        if it >= args.warmup:
            times_ms.append(dt * 1e3)
        if it % LOG_INTERVAL == 0:
            waited = time.perf_counter()
            lossf = loss.item()  # a CPU-GPU sync point, as in nanoGPT's log line
            item_wait_ms.append((time.perf_counter() - waited) * 1e3)
            print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f}ms", flush=True)
    if device == "cuda":
        torch.cuda.synchronize()
    after = counters()
    out: dict[str, object] = {}
    if probe is not None:
        probe.close()
        (row,) = results.read_rows(probe_dir / "run" / results.ROWS)
        out |= {
            "probe_mode": row.get("mode"), "probe_status": row.get("status"),
            "probe_total_ms": row.get("total_ms"), "probe_steps_timed": row.get("steps"),
        }  # fmt: skip
    shutil.rmtree(probe_dir, ignore_errors=True)
    p10, p90 = np.percentile(times_ms, [10, 90])
    return {
        "variant": variant.name,
        "median_ms": statistics.median(times_ms),
        "mean_ms": statistics.fmean(times_ms),
        "p10_ms": float(p10),
        "p90_ms": float(p90),
        "iters": len(times_ms),
        "item_wait_ms": statistics.median(item_wait_ms) if item_wait_ms else math.nan,
        "warm_up_s": warm_up_s,
        "tf32_in_loop": tf32,
        **{k: v for k, v in after.items()},
        "graphs_in_timed": after.get("graphs", 0) - warm_counters.get("graphs", 0),
        **out,
        "device": device,
        "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "compile": args.compile,
        "batch": batch,
        "block": block,
        "pid": os.getpid(),
    }


# The driver: fresh processes, interleaved.
def schedule(names: list[str], processes: int, diag_processes: int) -> list[tuple[int, str]]:
    """(round, variant) in run order. Every round runs `bare` and `probed` (those named); the
    diagnostics' processes are spread over the rounds, a few a round, so that a run the budget
    cuts short still has as many rounds of the two as it had time for; the order within a round
    turns by one each round, so that no variant always runs first."""
    primary = [n for n in names if n in PRIMARY]
    slots = [n for _ in range(diag_processes) for n in names if n not in PRIMARY]
    rounds = processes if primary else diag_processes
    per = math.ceil(len(slots) / rounds)
    out = []
    for r in range(rounds):
        order = primary + slots[r * per : (r + 1) * per]
        k = r % len(order) if order else 0
        out += [(r, n) for n in order[k:] + order[:k]]
    return out


def ratio(a: list[float], b: list[float]) -> dict[str, float]:
    """Geometric mean of `a` over that of `b`, with a Welch t interval at CONFIDENCE on the logs
    (NaN bounds with fewer than 2 values a side)."""
    from scipy import stats

    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    d = statistics.fmean(la) - statistics.fmean(lb)
    out = {"ratio": math.exp(d), "low": math.nan, "high": math.nan}
    if len(la) < 2 or len(lb) < 2:
        return out
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0:
        return out | {"low": math.exp(d), "high": math.exp(d)}
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    t = stats.t.ppf(0.5 + CONFIDENCE / 2, df)
    return out | {"low": math.exp(d - t * se), "high": math.exp(d + t * se)}


def summarize(records: list[dict]) -> list[dict]:
    """One row per variant: its processes, the geometric mean of their medians, and its ratio
    to `bare` (above 1: slower than bare)."""
    ok = [r for r in records if r.get("status") == "ok"]
    by: dict[str, list[dict]] = {}
    for r in ok:
        by.setdefault(r["variant"], []).append(r)
    bare = [r["median_ms"] for r in by.get("bare", [])]
    rows = []
    for name, rs in by.items():
        medians = [r["median_ms"] for r in rs]
        row = {
            "variant": name,
            "what": VARIANTS[name].what,
            "processes": len(rs),
            "step_ms": math.exp(statistics.fmean(math.log(v) for v in medians)),
            "tf32": "on" if all(r["tf32_in_loop"] for r in rs) else "off",
            "graphs": max(r.get("graphs", 0) for r in rs),
            "graph_breaks": max(r.get("graph_breaks", 0) for r in rs),
            "item_wait_ms": statistics.median(r["item_wait_ms"] for r in rs),
        }
        if bare and name != "bare":
            row |= {f"x_bare_{k}": v for k, v in ratio(medians, bare).items()}
        rows.append(row)
    return rows


def _clean(obj: object) -> object:
    """NaN as None: strict JSON (and every reader) has no NaN."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def _fmt(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows),
    ]


def commit() -> str:
    """The commit measured: `AMPBENCH_GIT_COMMIT` (a copied tree without .git), else git's."""
    given = os.environ.get("AMPBENCH_GIT_COMMIT")
    if given:
        return given[:12]
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, cwd=ROOT
        )
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def render(records: list[dict], summary: list[dict], note: str, at: str) -> str:
    first = next((r for r in records if r.get("status") == "ok"), {})
    lines = [
        "# The probe's cost on a compiled nanoGPT loop",
        "",
        f"At `{at}`, on {first.get('gpu', '?')}, torch {first.get('torch', '?')}, compile "
        f"{first.get('compile', '?')}, batch {first.get('batch', '?')} × "
        f"{first.get('block', '?')}, {first.get('iters', '?')} timed iterations a process after "
        "the warm-up; an iteration's time is the loop's own wall clock (nanoGPT's `dt`). "
        f"{note}",
        "",
        "## Per variant",
        "",
        "`step ms`: the geometric mean over the variant's processes of each process's median "
        "iteration; `× bare`: that over bare's (above 1: slower), with a 95% Welch t interval "
        "on the log medians, a process the unit (`–` with fewer than 2 processes a side). "
        "`item wait ms`: the median time `loss.item()` waited at a log line (about 0: the "
        "GPU was idle, waiting on the host).",
        "",
    ]
    lines += _table(
        ["variant", "what", "processes", "step ms", "× bare", "95% interval", "TF32",
         "graphs", "graph breaks", "item wait ms"],
        [
            [s["variant"], s["what"], s["processes"], s["step_ms"], s.get("x_bare_ratio", "–"),
             f"[{_fmt(s['x_bare_low'])}, {_fmt(s['x_bare_high'])}]" if "x_bare_low" in s
             else "–", s["tf32"], s["graphs"], s["graph_breaks"], s["item_wait_ms"]]
            for s in summary
        ],
    )  # fmt: skip
    lines += ["", "## Per process", ""]
    lines += _table(
        ["round", "variant", "status", "median ms", "mean ms", "p90 ms", "item wait ms",
         "graphs", "graph breaks", "probe's own ms", "warm-up s"],
        [
            [r["round"], r["variant"], r["status"], r.get("median_ms", math.nan),
             r.get("mean_ms", math.nan), r.get("p90_ms", math.nan),
             r.get("item_wait_ms", math.nan), r.get("graphs", "–"), r.get("graph_breaks", "–"),
             r.get("probe_total_ms") or "–", r.get("warm_up_s", math.nan)]
            for r in records
        ],
    )  # fmt: skip
    return "\n".join(lines) + "\n"


def child_args(args: argparse.Namespace) -> list[str]:
    out = ["--iters", str(args.iters), "--warmup", str(args.warmup), "--device", args.device]
    out += ["--compile" if args.compile else "--no-compile"]
    if args.tiny:
        out.append("--tiny")
    if args.batch:
        out += ["--batch", str(args.batch)]
    return out


def drive(args: argparse.Namespace, names: list[str]) -> int:
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        print(f"--out {out}: already holds files; give a new folder", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    plan = schedule(names, args.processes, args.diag_processes)
    counts = ", ".join(f"{n}×{sum(1 for _, m in plan if m == n)}" for n in names)
    print(f"{len(plan)} processes: {counts}", flush=True)
    records: list[dict] = []
    began, took = time.monotonic(), []
    note = "Every planned process ran."
    for r, name in plan:
        elapsed = time.monotonic() - began
        # The next process is guessed as long as the longest of the last three: the first,
        # which fills the compile caches, is the slowest by far.
        if took and elapsed + 1.2 * max(took[-3:]) > args.budget_s:
            note = (
                f"The budget ({args.budget_s:g} s) ended the run after {len(records)} of "
                f"{len(plan)} planned processes."
            )
            print(note, flush=True)
            break
        with tempfile.TemporaryDirectory() as tmp:
            result = Path(tmp) / "one.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--one", name,
                   "--json", str(result), *child_args(args)]  # fmt: skip
            start = time.monotonic()
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=args.timeout_s, cwd=ROOT
                )
                code, text = proc.returncode, proc.stdout + proc.stderr
            except subprocess.TimeoutExpired as exc:
                code, text = 124, f"{exc.stdout or ''}{exc.stderr or ''}timed out"
            seconds = time.monotonic() - start
            took.append(seconds)
            if code == 0 and result.is_file():
                rec = {"round": r, "status": "ok", **json.loads(result.read_text())}
            else:
                tail = (text.strip().splitlines() or ["no output"])[-1]
                rec = {"round": r, "variant": name, "status": "failed", "error": tail}
        rec["process_s"] = seconds
        records.append(rec)
        with (out / "processes.log").open("a") as f:
            f.write(f"=== round {r} {name} (exit {code}, {seconds:.1f} s)\n{text}\n")
        with (out / "processes.jsonl").open("a") as f:
            f.write(json.dumps(_clean(rec), allow_nan=False, default=str) + "\n")
        shown = (
            f"median {rec['median_ms']:.3f} ms, TF32 {'on' if rec['tf32_in_loop'] else 'off'}, "
            f"graphs {rec.get('graphs', '?')}, graph breaks {rec.get('graph_breaks', '?')}"
            if rec["status"] == "ok"
            else rec["error"]
        )
        print(f"round {r} {name:<20} {shown}  ({seconds:.1f} s)", flush=True)
    summary = summarize(records)
    at = commit()
    text = render(records, summary, note, at)
    (out / "probe_cost.md").write_text(text)
    (out / "probe_cost.json").write_text(
        json.dumps(
            _clean({"commit": at, "variants": summary, "note": note}), indent=1, allow_nan=False
        )
    )
    print(text, flush=True)
    return 0 if all(r["status"] == "ok" for r in records) else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="the folder to write (new or empty)")
    p.add_argument("--processes", type=int, default=5, help="processes a side for bare and probed")
    p.add_argument("--diag-processes", type=int, default=2, help="processes of each diagnostic")
    p.add_argument("--variants", default=",".join(DEFAULT), help=f"of {', '.join(VARIANTS)}")
    p.add_argument("--iters", type=int, default=300, help="timed iterations a process")
    p.add_argument("--warmup", type=int, default=30, help="untimed iterations first (compiles)")
    p.add_argument("--device", default=None, help="cuda (default where there is one) or cpu")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile the model (default: on CUDA only)")  # fmt: skip
    p.add_argument("--tiny", action="store_true", help="the CPU-size model, batch 4")
    p.add_argument("--batch", type=int, default=0, help="sequences a batch (default 64; 4 tiny)")
    p.add_argument("--budget-s", type=float, default=450.0, help="no process starts past it")
    p.add_argument("--timeout-s", type=float, default=300.0, help="one process's limit")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--json", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for name in ("processes", "diag_processes", "iters"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}={getattr(args, name)}: give a positive number")
    if args.warmup < 2:
        p.error(f"--warmup={args.warmup}: give 2 or more (the first iterations compile)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    bad = [n for n in names if n not in VARIANTS]
    if bad or not names:
        print(f"--variants {args.variants!r}: choose from {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device not in ("cuda", "cpu"):
        print(f"--device {args.device!r}: choose cuda or cpu", file=sys.stderr)
        return 2
    if args.compile is None:
        args.compile = args.device == "cuda"
    if args.one:
        if args.one not in VARIANTS or not args.json:
            print(f"--one {args.one!r}: a variant and --json FILE", file=sys.stderr)
            return 2
        record = one(VARIANTS[args.one], args)
        Path(args.json).write_text(json.dumps(_clean(record), allow_nan=False, default=str))
        return 0
    if not args.out:
        print("--out: give the folder to write", file=sys.stderr)
        return 2
    return drive(args, names)


if __name__ == "__main__":
    sys.exit(main())
