"""The answer on one GPU in a few lines: what a reader of the README wants first, computed from a
timing run's rows and the tables of one or more numerics studies.

Each line is one bullet with a bold lead: how much faster autocast is, which dtype the gradients
have, whether float16 needs GradScaler (and why, by its measured underflow and divergence), what
GradScaler costs, what bf16 gives up, the fastest recipe per batch regime with what it costs in
convergence, the fastest recipe that trains like fp32, and memory. Every figure is a cell of the
rows or the tables; a line whose data the folders lack is left out, never guessed.

Several studies: each line reads the first study (in the order given) that has its data; a line
about training prefers the first study that looked for divergence. A comparison with fp32 always
uses fp32 of the same study (same weights, same batches). The
thresholds are the numerics Answer's (`bench.numerics.answer`), so the two never disagree.
Pure: pandas only, no torch; nothing here judges a run against expectations.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from bench.numerics.analysis import HEALTHY, NONFINITE
from bench.numerics.answer import FLUSH_LIMIT, LOSS_GAP, bf16_against_fp16_error
from bench.numerics.tables import ACTIVATION_GRAD, PARAM_GRAD, PRODUCED_GRAD
from bench.publish.findings import contenders
from bench.publish.tables import number

AUTOCAST = {"fp16-amp": "float16", "bf16-amp": "bfloat16"}
"""The autocast modes whose gradient dtypes the summary states, with the dtype they run in."""


def _n(x: float) -> str:
    """A figure in a sentence: 3 significant digits."""
    return number(float(x), 3)


def _and(items: list[str]) -> str:
    """Items joined as prose: a; a and b; a, b and c."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _batches(sizes: list[int]) -> str:
    """`[256]` → "256"; `[256, 1024]` → "256 and 1024"; three or more → "256–4096"."""
    sizes = sorted(int(s) for s in sizes)
    return _and([str(s) for s in sizes]) if len(sizes) < 3 else f"{sizes[0]}–{sizes[-1]}"


def _eager(rows: pd.DataFrame, mode: str, bs: int) -> float:
    """The eager step time of `mode` at batch `bs` among `rows` (NaN where it did not pass)."""
    sel = rows[(rows["mode"] == mode) & (rows["batch_size"] == bs) & (rows["variant"] == "eager")]
    return float(sel["total_ms"].iloc[0]) if len(sel) else math.nan


def passing(rows: pd.DataFrame, optimizer: str) -> pd.DataFrame:
    """The rows a summary may quote: passed, not recompiled during timing, one rank, this Adam."""
    ok = contenders(rows)
    ok = ok[ok["optimizer"] == optimizer]
    if "parallel" in ok:
        ok = ok[ok["parallel"] == "none"]
    return ok


# ---- the numerics studies ------------------------------------------------------------------


def _first(studies: list[dict], name: str, has: Callable[[pd.DataFrame], bool]) -> pd.DataFrame:
    """Table `name` of the first study for which `has(table)` holds; empty if none."""
    for study in studies:
        table = study[name]
        if len(table) and has(table):
            return table
    return pd.DataFrame()


def _measured(summary: pd.DataFrame) -> pd.DataFrame:
    """Summary rows whose divergence was looked for (older studies leave the cell empty)."""
    if "divergence" not in summary:
        return summary.iloc[:0]
    return summary[summary["divergence"].isin([HEALTHY, "blowup", NONFINITE])]


def against_fp32(studies: list[dict], mode: str) -> pd.DataFrame:
    """Per batch size of one study that trained both `mode` and fp32: the mean final training
    loss of each over seeds, their ratio, whether it is within LOSS_GAP, and the mode's runs that
    diverged (`diverged`, at `steps`). The study is the first that looked for divergence, else the
    first at all: a study that traced divergence says more about the same runs."""
    both = [s for s in studies if {mode, "fp32"} <= set(s["summary"]["mode"])]
    both.sort(key=lambda s: _measured(s["summary"]).empty)  # stable: the given order otherwise
    if not both:
        return pd.DataFrame()
    rows = []
    for bs, g in both[0]["summary"].groupby("batch_size", sort=True):
        mine, ref = g[g["mode"] == mode], g[g["mode"] == "fp32"]
        if mine.empty or ref.empty:
            continue
        bad = _measured(mine)
        bad = bad[bad["divergence"] != HEALTHY]
        loss, ref_loss = mine["final_loss"].mean(), ref["final_loss"].mean()
        rows.append(
            {
                "batch_size": int(bs),
                "loss": loss,
                "fp32_loss": ref_loss,
                "ratio": loss / ref_loss,
                # A NaN loss (a run that went non-finite) is not within.
                "within": bool(loss <= ref_loss * (1 + LOSS_GAP)),
                "diverged": len(bad),
                "steps": sorted(int(s) for s in bad["diverged_at_step"]),
                "runs": len(mine),
            }
        )
    return pd.DataFrame(rows)


def trains_like_fp32(studies: list[dict], mode: str) -> bool | None:
    """Whether `mode` ended within LOSS_GAP of fp32's final loss at every batch size trained,
    without a divergence; None where no study trained it beside fp32."""
    if mode == "fp32":
        return True
    vs = against_fp32(studies, mode)
    if vs.empty:
        return None
    return bool(vs["within"].all() and (vs["diverged"] == 0).all())


def _cost(studies: list[dict], mode: str) -> str:
    """What `mode` did to training against fp32, as a clause."""
    if mode == "fp32":
        return "it is the reference the numerics study compares with"
    vs = against_fp32(studies, mode)
    if vs.empty:
        return "no numerics study trained it"
    first, *rest = vs.itertuples()
    parts = [f"{_n(first.ratio)}× fp32's at batch {first.batch_size}"]
    parts += [f"{_n(r.ratio)}× at {r.batch_size}" for r in rest]
    text = f"in training its final loss is {_and(parts)}"
    bad = vs[vs["diverged"] > 0]
    if len(bad):
        text += f", and it diverged at batch {_batches(bad['batch_size'].tolist())}"
    return text


# ---- the lines ----------------------------------------------------------------------------


def speed_line(ok: pd.DataFrame, optimizer: str) -> str | None:
    """fp32, TF32 and bf16 autocast at the largest batch size where fp32 and bf16-amp ran eager."""
    both = [
        bs
        for bs in sorted(ok["batch_size"].unique())
        if not math.isnan(_eager(ok, "fp32", bs)) and not math.isnan(_eager(ok, "bf16-amp", bs))
    ]
    if not both:
        return None
    bs = both[-1]
    fp32, tf32, bf16 = (_eager(ok, m, bs) for m in ("fp32", "tf32", "bf16-amp"))
    times = [f"{_n(fp32)} ms in fp32"]
    faster = [f"{_n(fp32 / bf16)}× fp32"]
    if not math.isnan(tf32):
        times.append(f"{_n(tf32)} ms with TF32")
        faster.append(f"{_n(tf32 / bf16)}× TF32")
    times.append(f"{_n(bf16)} ms under bf16 autocast")
    return (
        f"- **Speed.** At batch {bs} (eager, {optimizer} Adam) a training step takes "
        f"{_and(times)}: {_and(faster)}."
    )


def _dtypes(audit: pd.DataFrame, mode: str, kind: str) -> str:
    dtypes = sorted(set(audit[(audit["mode"] == mode) & (audit["kind"] == kind)]["dtype"]))
    return " and ".join(dtypes) or "not observed"


def gradients_line(studies: list[dict]) -> str | None:
    """The dtype of the activation gradients, of each weight gradient as its matmul produced it,
    and of `param.grad`, under each autocast mode of the first audit that has fp16-amp."""
    audit = _first(studies, "audit", lambda a: "fp16-amp" in set(a["mode"]))
    if audit.empty:
        return None
    parts = []
    for mode, dtype in AUTOCAST.items():
        if mode not in set(audit["mode"]):
            continue
        act, made, kept = (
            _dtypes(audit, mode, k) for k in (ACTIVATION_GRAD, PRODUCED_GRAD, PARAM_GRAD)
        )
        if parts and act == made:
            parts.append(f"Under {dtype} autocast they are {act}, and `param.grad` is {kept}.")
            continue
        text = (
            f"Under {dtype} autocast the activation gradients are {act} and each weight "
            f"gradient leaves its matmul as {made}; `param.grad` is {kept}"
        )
        if made != kept:
            # The cast that fed the float32 weight to the low-precision matmul has a backward:
            # it casts the gradient up after it was rounded, which restores no precision.
            text += " only because autograd casts that gradient back to the weight's dtype"
        parts.append(text + ".")
    return f"- **Gradients.** {' '.join(parts)}"


def _underflow(census: pd.DataFrame) -> tuple[list[int], str]:
    """(the batch sizes the census measured fp16 without a scaler at, and a clause on where it
    flushed more than FLUSH_LIMIT of some gradient to zero; empty where it did not)."""
    noscale = census[census["mode"] == "fp16-amp-noscale"]
    sizes = sorted(int(b) for b in noscale["batch_size"].unique())
    worst = {int(bs): g.loc[g["flushed"].idxmax()] for bs, g in noscale.groupby("batch_size")}
    flushing = [bs for bs in sizes if worst[bs]["flushed"] > FLUSH_LIMIT]
    if not flushing:
        return sizes, ""
    w = worst[flushing[0]]
    where = (
        f"every batch size measured, {_batches(sizes)}"
        if flushing == sizes
        else f"batch {_batches(flushing)} of {_batches(sizes)}"
    )
    return sizes, (
        f"more than {FLUSH_LIMIT:.0%} of some gradient underflows to zero at {where} "
        f"({w['flushed']:.1%} of {w['tensor']} at batch {flushing[0]})"
    )


def scaler_line(studies: list[dict]) -> str | None:
    """Whether float16 needs GradScaler: its measured underflow (the first census with fp16
    without a scaler) and training (against fp32, divergence where a study looked for it)."""
    census = _first(studies, "census", lambda c: "fp16-amp-noscale" in set(c["mode"]))
    vs = against_fp32(studies, "fp16-amp-noscale")
    if census.empty and vs.empty:
        return None
    sizes, flushed = _underflow(census) if len(census) else ([], "")
    training = []
    for r in vs.itertuples() if len(vs) else ():
        if r.diverged:
            steps = _and([str(s) for s in r.steps])
            training.append(
                f"diverged at batch {r.batch_size} (step{'s' if len(r.steps) > 1 else ''} "
                f"{steps}, {r.diverged} of {r.runs} seeds)"
            )
        elif not r.within:
            training.append(
                f"ended at {_n(r.loss)} against fp32's {_n(r.fp32_loss)} at batch {r.batch_size}"
            )
    evidence = ([flushed] if flushed else []) + ([f"training {_and(training)}"] if training else [])
    if evidence:
        return (
            f"- **GradScaler: needed with float16.** Without it {'; '.join(evidence)}. A float32 "
            "`param.grad` does not help: the gradients are rounded to float16 before that cast."
        )
    measured = []
    if len(census):
        top = census[census["mode"] == "fp16-amp-noscale"]["flushed"].max()
        measured.append(f"at most {top:.1%} of any gradient underflowed to zero")
    if len(vs):
        measured.append(f"training ended within {LOSS_GAP:.0%} of fp32's loss")
    where = _batches(sizes or vs["batch_size"].tolist())
    return (
        f"- **GradScaler: not needed with float16 on this model** at batch {where}: "
        f"{' and '.join(measured)}."
    )


def scaler_cost_line(ok: pd.DataFrame, optimizer: str) -> str | None:
    """fp16 with GradScaler against fp16 without, eager, per batch size; and bf16 autocast."""
    parts, last = [], None
    for bs in sorted(ok["batch_size"].unique()):
        scaled, bare = _eager(ok, "fp16-amp", bs), _eager(ok, "fp16-amp-noscale", bs)
        if math.isnan(scaled) or math.isnan(bare):
            continue
        parts.append(f"{scaled / bare - 1:.1%} at {'batch ' if not parts else ''}{bs}")
        last = (bs, scaled, bare)
    if last is None:
        return None
    bs, scaled, bare = last
    line = (
        f"- **What GradScaler costs.** It lengthens the fp16 step by {_and(parts)} "
        f"({_n(scaled)} against {_n(bare)} ms at {bs}; eager, {optimizer} Adam)"
    )
    bf16 = _eager(ok, "bf16-amp", bs)
    if not math.isnan(bf16):
        line += f"; bf16 autocast needs no scaler and takes {_n(bf16)} ms there"
    return line + "."


def bf16_line(studies: list[dict]) -> str | None:
    """bf16 autocast against fp32 in training, and its gradient error against scaled fp16's."""
    vs = against_fp32(studies, "bf16-amp")
    census = _first(studies, "census", lambda c: {"bf16-amp", "fp16-amp"} <= set(c["mode"]))
    parts = []
    if len(vs):
        losses = _and(
            [
                f"{_n(r.loss)} against {_n(r.fp32_loss)} at batch {r.batch_size}"
                for r in vs.itertuples()
            ]
        )
        verdict = (
            f"ends training within {LOSS_GAP:.0%} of fp32's loss"
            if trains_like_fp32(studies, "bf16-amp")
            else f"does not end training within {LOSS_GAP:.0%} of fp32's loss"
        )
        parts.append(f"{verdict} ({losses})")
    errors = bf16_against_fp16_error(census)
    if errors is not None:
        bf, fp = errors
        parts.append(
            f"its gradients are {_n(bf / fp)}× further from fp32's than scaled fp16's "
            f"(median relative error {_n(bf)} against {_n(fp)}): it keeps float32's range "
            "with 3 fewer mantissa bits"
        )
    if not parts:
        return None
    return f"- **What bf16 gives up.** bf16 autocast {'; '.join(parts)}."


def _winners(ok: pd.DataFrame) -> list[tuple[int, pd.Series]]:
    """(batch size, its fastest row) per batch size of `ok`, smallest batch first."""
    return [
        (int(bs), g.loc[g["total_ms"].idxmin()]) for bs, g in ok.groupby("batch_size", sort=True)
    ]


def _regimes(winners: list[tuple[int, pd.Series]]) -> list[list[tuple[int, pd.Series]]]:
    """Consecutive batch sizes with the same winning mode, grouped."""
    groups: list[list[tuple[int, pd.Series]]] = []
    for bs, row in winners:
        if groups and groups[-1][-1][1]["mode"] == row["mode"]:
            groups[-1].append((bs, row))
        else:
            groups.append([(bs, row)])
    return groups


def _at(ok: pd.DataFrame, group: list[tuple[int, pd.Series]]) -> str:
    """`mode` at batch 256 (compile, 2.33 ms, 5.15× eager fp32) and 1024 (...)."""
    parts = []
    for bs, row in group:
        fp32 = _eager(ok, "fp32", bs)
        vs = f", {_n(fp32 / row['total_ms'])}× eager fp32" if not math.isnan(fp32) else ""
        parts.append(f"{bs} ({row['variant']}, {_n(row['total_ms'])} ms{vs})")
    return f"`{group[0][1]['mode']}` at batch {_and(parts)}"


def fastest_lines(ok: pd.DataFrame, studies: list[dict], optimizer: str) -> list[str]:
    """Per regime (consecutive batch sizes with one winner): the fastest mode and variant with
    its speed over eager fp32, and what it does to training; then the fastest among the modes
    that train like fp32, where that differs somewhere."""
    if ok.empty:
        return []
    winners = _winners(ok)
    lines = [
        f"- **Fastest at batch {_batches([bs for bs, _ in group])}** (any variant, {optimizer} "
        f"Adam): {_at(ok, group)}; {_cost(studies, group[0][1]['mode'])}."
        for group in _regimes(winners)
    ]
    like = {m: trains_like_fp32(studies, m) for m in ok["mode"].unique()}
    if all(v is None for m, v in like.items() if m != "fp32"):
        return lines  # no study trained a mode beside fp32: nothing to choose among
    safe = ok[ok["mode"].map(like).eq(True)]
    safe_winners = _winners(safe)
    if [r["mode"] for _, r in safe_winners] == [r["mode"] for _, r in winners]:
        return lines
    untested = sorted(m for m, v in like.items() if v is None)
    note = f"; no study trained {', '.join(untested)}" if untested else ""
    lines.append(
        f"- **Fastest that trains like fp32** (final loss within {LOSS_GAP:.0%} of fp32's at "
        f"every batch size trained, no divergence{note}): "
        f"{'; '.join(_at(ok, g) for g in _regimes(safe_winners))}."
    )
    return lines


def memory_line(ok: pd.DataFrame) -> str | None:
    """Peak memory at the largest batch size where eager fp32 has a measured peak, of fp32, bf16
    autocast and the mode with the lowest peak; and the weights, gradients and Adam state each
    keeps."""
    eager = ok[(ok["variant"] == "eager") & ok["peak_alloc_gib"].notna()]
    sizes = sorted(eager[eager["mode"] == "fp32"]["batch_size"].unique())
    if not sizes:
        return None
    bs = sizes[-1]
    at = eager[eager["batch_size"] == bs].set_index("mode")
    # Lowest at the precision shown; a tie goes to bf16-amp, then to the mode listed first.
    shown_peak = at["peak_alloc_gib"].round(2)
    lowest = shown_peak.idxmin()
    if "bf16-amp" in at.index and shown_peak["bf16-amp"] == shown_peak[lowest]:
        lowest = "bf16-amp"
    shown = list(dict.fromkeys(m for m in ("fp32", "bf16-amp", lowest) if m in at.index))
    peaks = _and([f"{m} {_n(at.loc[m, 'peak_alloc_gib'])} GiB" for m in shown])
    line = f"- **Memory** (peak allocated at batch {bs}, eager): {peaks}"
    if "model_state_gib" not in at or at.loc[shown, "model_state_gib"].isna().any():
        return line + "."
    state = at["model_state_gib"]
    if "bf16-amp" in at.index and math.isclose(state["bf16-amp"], state["fp32"], rel_tol=1e-3):
        line += (
            f". Autocast keeps the weights, gradients and Adam state in float32 "
            f"({_n(state['fp32'])} GiB), so it saves only on activations"
        )
    if lowest not in ("fp32", "bf16-amp") and state[lowest] < state["fp32"]:
        dtype = at.loc[lowest, "param_dtype"] if "param_dtype" in at else ""
        held = f" in {dtype}" if isinstance(dtype, str) and dtype else ""
        line += f"; {lowest} holds them{held} ({_n(state[lowest])} GiB)"
    return line + "."


def heading(env: dict, sources: list[str]) -> str:
    """The line above the bullets: the GPU and torch of the timing run (its env.json), and the
    folders, as markdown links."""
    where = "the CPU" if env.get("device") == "cpu" else f"one {env.get('gpu', 'unnamed GPU')}"
    links = f" ({', '.join(sources)})" if sources else ""
    return f"Measured on {where}, torch {env.get('torch', '?')}{links}:"


def summary(
    rows: pd.DataFrame,
    env: dict,
    studies: list[dict],
    sources: list[str],
    *,
    optimizer: str = "fused",
) -> list[str]:
    """The summary: its heading, a blank line, then its bullets, from a timing run's rows
    (`bench.store.results.load`) and env.json, the tables of numerics studies
    (`bench.numerics.tables.load`), first study first, and links to the folders (markdown)."""
    ok = passing(rows, optimizer)
    lines = [
        speed_line(ok, optimizer),
        gradients_line(studies),
        scaler_line(studies),
        scaler_cost_line(ok, optimizer),
        bf16_line(studies),
        *fastest_lines(ok, studies, optimizer),
        memory_line(ok),
    ]
    return [heading(env, sources), "", *(line for line in lines if line)]
