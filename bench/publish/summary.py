"""The answer on one GPU in a few lines, from a timing run's rows (and, through
`bench.publish.summary_studies`, numerics studies): one bold-led bullet per finding, a line whose
data the folders lack left out, a claim the rows cannot carry not made (`bench.verdicts.timing`)."""

from __future__ import annotations

import math

import pandas as pd

from bench.ground import catalog
from bench.numerics.render.answer import LOSS_GAP
from bench.publish.findings import float8_ratio, unconverted_note
from bench.publish.summary_studies import (
    bf16_line,
    gradients_line,
    learning_line,
    scaler_line,
    scaler_needed,
    training_cost,
    trains_like_fp32,
)
from bench.store.run_env import RunEnv
from bench.text.tables import batch_sizes, figure, joined
from bench.verdicts import memory, timing
from bench.verdicts.timing import Fastest


def _eager_row(rows: pd.DataFrame, mode: str, bs: int) -> pd.Series | None:
    """The eager row of `mode` at batch `bs` among `rows` (None where it did not pass)."""
    sel = rows[(rows["mode"] == mode) & (rows["batch_size"] == bs) & (rows["variant"] == "eager")]
    return sel.iloc[0] if len(sel) else None


def _eager(rows: pd.DataFrame, mode: str, bs: int) -> float:
    """The eager step time of `mode` at batch `bs` among `rows` (NaN where it did not pass)."""
    row = _eager_row(rows, mode, bs)
    return float(row["total_ms"]) if row is not None else math.nan


def passing(rows: pd.DataFrame, optimizer: str) -> pd.DataFrame:
    """The rows a summary may quote: passed, not recompiled during timing, one rank, this Adam."""
    ok = timing.contenders(rows)
    ok = ok[ok["optimizer"] == optimizer]
    if "parallel" in ok:
        ok = ok[ok["parallel"] == "none"]
    return ok


# ---- the lines ----------------------------------------------------------------------------


def speed_line(ok: pd.DataFrame, optimizer: str) -> str | None:
    """The reference (fp32), TF32 and the headline mode (bf16 autocast) at the largest batch
    size where the reference and the headline mode ran eager."""
    ref, head, tf32_mode = catalog.reference(), catalog.headline(), catalog.tf32()
    both = [
        bs
        for bs in sorted(ok["batch_size"].unique())
        if not math.isnan(_eager(ok, ref, bs)) and not math.isnan(_eager(ok, head, bs))
    ]
    if not both:
        return None
    bs = both[-1]
    fp32, tf32, bf16 = (_eager(ok, m, bs) for m in (ref, tf32_mode, head))
    times = [f"{figure(fp32)} ms in {ref}"]
    faster = [f"{figure(fp32 / bf16)}× {ref}"]
    if not math.isnan(tf32):
        times.append(f"{figure(tf32)} ms with TF32")
        faster.append(f"{figure(tf32 / bf16)}× TF32")
    times.append(f"{figure(bf16)} ms under {catalog.label(head)}")
    return (
        f"- **Speed.** At batch {bs} (eager, {optimizer} Adam) a training step takes "
        f"{joined(times)}: {joined(faster)}."
    )


def scaler_cost_line(ok: pd.DataFrame, optimizer: str, env: RunEnv) -> str | None:
    """GradScaler's cost per batch size (fp16 with it against without, eager) where
    `bench.verdicts.timing.scaler_cost` decides it, else why not in one clause."""
    scaled_mode, bare_mode = catalog.fp16_pair()
    head = catalog.headline()
    pairs = []
    for bs in sorted(ok["batch_size"].unique()):
        scaled, bare = _eager_row(ok, scaled_mode, bs), _eager_row(ok, bare_mode, bs)
        if scaled is not None and bare is not None:
            pairs.append((int(bs), scaled, bare))
    if not pairs:
        return None
    lead = "- **What GradScaler costs.**"
    why = timing.scaler_cost_reason(env, pd.DataFrame([r for _, *two in pairs for r in two]))
    if why is not None and env.get("kind") not in (None, "timing"):
        return f"{lead} Not measured: {why}."
    judged = [(bs, a, b, timing.scaler_cost(a, b, interleaved=why is None)) for bs, a, b in pairs]
    cost = [(bs, a, b) for bs, a, b, c in judged if c.verdict in (timing.SLOWER, timing.FASTER)]
    noise = [bs for bs, _, _, c in judged if c.verdict == timing.TIED]
    unknown = [(bs, c.why) for bs, _, _, c in judged if c.verdict == timing.NOT_KNOWN]
    if not cost and not noise:
        return f"{lead} Not known: {unknown[-1][1]}."
    if cost:
        parts = [
            f"{a['total_ms'] / b['total_ms'] - 1:+.1%} at {'batch ' if i == 0 else ''}{bs}"
            for i, (bs, a, b) in enumerate(cost)
        ]
        bs, scaled, bare = cost[-1]
        line = (
            f"{lead} It changes the fp16 step by {joined(parts)} ({figure(scaled['total_ms'])} "
            f"against {figure(bare['total_ms'])} ms at {bs}; eager, {optimizer} Adam)"
        )
        if noise:
            line += f"; at {batch_sizes(noise)} the two are within noise"
    else:
        bs = noise[-1]
        line = (
            f"{lead} Within noise at batch {batch_sizes(noise)} (eager, {optimizer} Adam: the "
            "p10–p90 of the two overlap)"
        )
    if unknown:
        line += f"; not known at {batch_sizes([b for b, _ in unknown])} ({unknown[-1][1]})"
    bf16 = _eager(ok, head, bs)
    if not math.isnan(bf16):
        line += f"; {catalog.label(head)} needs no scaler and takes {figure(bf16)} ms there"
    return line + "."


def bf16_fp16_line(ok: pd.DataFrame, optimizer: str, env: RunEnv) -> str | None:
    """bf16 autocast against fp16 autocast with GradScaler (what each needs to train), eager, per
    batch size: step time by the rule GradScaler's cost is judged by (`timing.scaler_cost`, any
    two rows of one case), peak allocated memory by the memory verdict's default tolerance."""
    fp16, _ = catalog.fp16_pair()
    bf16 = catalog.headline()
    pairs = [
        (int(bs), a, b)
        for bs in sorted(ok["batch_size"].unique())
        if (a := _eager_row(ok, bf16, bs)) is not None
        and (b := _eager_row(ok, fp16, bs)) is not None
    ]
    if not pairs:
        return None
    interleaved = timing.scaler_cost_reason(
        env, pd.DataFrame([r for _, *two in pairs for r in two])
    )
    parts, unknown, mems = [], [], []
    for bs, a, b in pairs:
        cost = timing.scaler_cost(a, b, interleaved=interleaved is None)
        speed = {
            timing.SLOWER: f"{cost.ratio - 1:.1%} slower",
            timing.FASTER: f"{1 - cost.ratio:.1%} faster",
            timing.TIED: "as fast within noise",
        }.get(cost.verdict, "speed not known")
        if cost.verdict == timing.NOT_KNOWN:
            unknown.append(cost.why)
        gap = float(a["peak_alloc_gib"]) - float(b["peak_alloc_gib"])
        same = abs(gap) <= memory.DEFAULT.gib(float(b["peak_alloc_gib"]))
        mems.append("the same peak memory" if same else f"{gap:+.3g} GiB of peak memory")
        parts.append(
            f"{speed} at {'batch ' if not parts else ''}{bs} ({figure(a['total_ms'])} against "
            f"{figure(b['total_ms'])} ms)"
        )
    if len(unknown) == len(pairs):  # no speed verdict anywhere: why once, the times as measured
        times = [p.removeprefix("speed not known at ") for p in parts]
        parts = [f"speed not known ({unknown[-1]}: {joined(times)})"]
        unknown = []
    if len(set(mems)) == 1:  # one memory verdict for every batch size: said once
        said = (
            f"{joined(parts)}; {mems[0]} at {'each' if len(mems) > 1 else f'batch {pairs[0][0]}'}"
        )
    else:
        said = joined([f"{p}, {m}" for p, m in zip(parts, mems, strict=True)])
    why = f" Speed not known: {unknown[-1]}." if unknown else ""
    return (
        f"- **bf16 against fp16** ({catalog.label(bf16)} against {fp16}, with the GradScaler "
        f"fp16 needs; eager, {optimizer} Adam): {said}.{why}"
    )


def _winners(ok: pd.DataFrame) -> list[tuple[int, Fastest]]:
    """(batch size, its fastest row or the rows tied with it) per batch size of `ok`, ascending."""
    return [(int(bs), timing.fastest(g)) for bs, g in ok.groupby("batch_size", sort=True)]


def _regimes(winners: list[tuple[int, Fastest]]) -> list[list[tuple[int, Fastest]]]:
    """Consecutive batch sizes whose verdict names the same modes (one mode, alone or tied
    with itself at other variants; or the same modes tied), grouped."""
    groups: list[list[tuple[int, Fastest]]] = []
    for bs, f in winners:
        if groups and groups[-1][-1][1].modes == f.modes:
            groups[-1].append((bs, f))
        else:
            groups.append([(bs, f)])
    return groups


def _pick(ok: pd.DataFrame, bs: int, row: pd.Series) -> str:
    """`compile, 2.33 ms, 5.15× eager fp32`: a row's variant, time and speed over the reference."""
    fp32 = _eager(ok, catalog.reference(), bs)
    vs = f", {figure(fp32 / row['total_ms'])}× eager {catalog.reference()}"
    return f"{row['variant']}, {figure(row['total_ms'])} ms{vs if not math.isnan(fp32) else ''}"


def _tied(ok: pd.DataFrame, bs: int, f: Fastest) -> str:
    """Every row of a tie, each mode once: `bf16-pure` (compile, 2.31 ms, 5.20× eager fp32;
    cudagraph, 2.32 ms) and `bf16-amp` (...)."""
    named = []
    for mode, g in f.rows.groupby("mode", sort=False):
        first, *rest = (r for _, r in g.iterrows())
        others = "".join(f"; {r['variant']}, {figure(r['total_ms'])} ms" for r in rest)
        named.append(f"`{mode}` ({_pick(ok, bs, first)}{others})")
    return joined(named)


def _at(ok: pd.DataFrame, group: list[tuple[int, Fastest]], *, say_batch: bool) -> str:
    """`mode` at batch 256 (compile, 2.33 ms, 5.15× eager fp32) and 1024 (...), variants tied
    with it named; where modes are tied, `tied within noise: ` and every row tied."""
    first = group[0][1]
    if len(first.modes) == 1:
        parts = []
        for bs, f in group:
            others = [r["variant"] for _, r in f.rows.iloc[1:].iterrows()]
            tied = f"; {joined(others)} tied within noise" if others else ""
            parts.append(f"{bs} ({_pick(ok, bs, f.first)}{tied})")
        return f"`{first.modes[0]}` at batch {joined(parts)}"
    say_batch = say_batch or len(group) > 1
    per = [
        f"{f'at batch {bs}: ' if say_batch else ''}{_tied(ok, bs, f)} ({f.reason})"
        for bs, f in group
    ]
    return f"tied within noise: {'; '.join(per)}"


def _costs(studies: list[dict], modes: tuple[str, ...]) -> str:
    """What training did to each mode named (`training_cost`), each by name where several."""
    if len(modes) == 1:
        return training_cost(studies, modes[0])
    costs: dict[str, list[str]] = {}
    for mode in modes:
        costs.setdefault(training_cost(studies, mode), []).append(f"`{mode}`")
    return "; ".join(f"{joined(named)}: {cost}" for cost, named in costs.items())


def fastest_lines(ok: pd.DataFrame, studies: list[dict], optimizer: str) -> list[str]:
    """Per regime (consecutive batch sizes with one winner or one tie): the fastest mode with
    its speed over eager fp32 and its training, then the fastest that trains like fp32."""
    ref = catalog.reference()
    if ok.empty:
        return []
    winners = _winners(ok)
    lines = [
        f"- **Fastest at batch {batch_sizes([bs for bs, _ in group])}** (any variant, {optimizer} "
        f"Adam): {_at(ok, group, say_batch=False)}; {_costs(studies, group[0][1].modes)}."
        for group in _regimes(winners)
    ]
    like = {m: trains_like_fp32(studies, m) for m in ok["mode"].unique()}
    if all(v is None for m, v in like.items() if m != ref):
        if studies:  # studies that cannot decide it (a synthetic task): say so, once
            lines.append(
                f"- **Which of these trains like {ref}: not known** here: a numerics study "
                "trains one or two seeds on a synthetic task, which cannot decide it; a "
                "time-to-quality study on real data does (docs/quality.md)."
            )
        return lines
    safe = ok[ok["mode"].map(like).eq(True)]
    safe_winners = _winners(safe)
    if [f.modes for _, f in safe_winners] == [f.modes for _, f in winners]:
        return lines
    untested = sorted(m for m, v in like.items() if v is None)
    note = f"; no study trained {', '.join(untested)}" if untested else ""
    _, bare = catalog.fp16_pair()
    if bare in {m for _, f in safe_winners for m in f.modes} and scaler_needed(studies):
        note += f"; {bare} trained like {ref} in these runs, though its underflow needs GradScaler"
    lines.append(
        f"- **Fastest that trains like {ref}** (each seed's final loss within {LOSS_GAP:.0%} of "
        f"{ref}'s worst at every batch size trained, no divergence{note}): "
        f"{'; '.join(_at(ok, g, say_batch=True) for g in _regimes(safe_winners))}."
    )
    return lines


def float8_line(ok: pd.DataFrame, unconverted: list[str] | None = None) -> str | None:
    """Each float8 mode against the headline mode per batch size, at its fastest variant:
    where it pays and where not; then the `unconverted` modes, which are `unsupported`."""
    per = timing.float8_against_headline(ok)
    note = unconverted_note(unconverted or [])
    if not per:
        return f"- **Float8.**{note}" if note else None
    head = catalog.headline()
    parts = [
        f"at batch {bs} against {figure(base['total_ms'])} ms: "
        + "; ".join(float8_ratio(base, r) for r in rows)
        for bs, base, rows in per
    ]
    slower: dict[str, list[int]] = {}
    for bs, base, rows in per:
        for mode in timing.float8_not_paying(base, rows):
            slower.setdefault(mode, []).append(bs)
    where = [f"{mode} at batch {batch_sizes(sizes)}" for mode, sizes in slower.items()]
    tail = f" Below 1×, float8 does not pay: {joined(where)}." if where else ""
    return (
        f"- **Float8** against {head}, each at its fastest variant ({head} too): "
        f"{'; '.join(parts)}.{tail}{note}"
    )


def memory_line(ok: pd.DataFrame) -> str | None:
    """Peak memory of the reference, the headline mode and the lowest mode, at the largest batch
    size where the eager reference has one; and the state each keeps."""
    ref, head = catalog.reference(), catalog.headline()
    eager = ok[(ok["variant"] == "eager") & ok["peak_alloc_gib"].notna()]
    sizes = sorted(eager[eager["mode"] == ref]["batch_size"].unique())
    if not sizes:
        return None
    bs = sizes[-1]
    at = eager[eager["batch_size"] == bs].set_index("mode")
    # Lowest at the precision shown; a tie goes to the headline mode, then to the mode listed
    # first.
    shown_peak = at["peak_alloc_gib"].round(2)
    lowest = shown_peak.idxmin()
    if head in at.index and shown_peak[head] == shown_peak[lowest]:
        lowest = head
    shown = list(dict.fromkeys(m for m in (ref, head, lowest) if m in at.index))
    peaks = joined([f"{m} {figure(at.loc[m, 'peak_alloc_gib'])} GiB" for m in shown])
    line = f"- **Memory** (peak allocated at batch {bs}, eager): {peaks}"
    if "model_state_gib" not in at or at.loc[shown, "model_state_gib"].isna().any():
        return line + "."
    state = at["model_state_gib"]
    if head in at.index and math.isclose(state[head], state[ref], rel_tol=1e-3):
        line += (
            f". Autocast keeps the weights, gradients and Adam state in float32 "
            f"({figure(state[ref])} GiB), so it saves only on activations"
        )
    if lowest not in (ref, head) and state[lowest] < state[ref]:
        dtype = at.loc[lowest, "param_dtype"] if "param_dtype" in at else ""
        held = f" in {dtype}" if isinstance(dtype, str) and dtype else ""
        line += f"; {lowest} holds them{held} ({figure(state[lowest])} GiB)"
    return line + "."


def heading(env: RunEnv, sources: list[str]) -> str:
    """The line above the bullets: the timing run's GPU and torch, and links to the folders."""
    where = "the CPU" if env.get("device") == "cpu" else f"one {env.get('gpu', 'unnamed GPU')}"
    links = f" ({', '.join(sources)})" if sources else ""
    return f"Measured on {where}, torch {env.get('torch', '?')}{links}:"


def summary(
    rows: pd.DataFrame,
    env: RunEnv,
    studies: list[dict],
    sources: list[str],
    *,
    optimizer: str = "fused",
) -> list[str]:
    """The summary's heading and bullets from a timing run's rows and env.json, the numerics
    studies' tables (first study first) and links to the folders."""
    ok = passing(rows, optimizer)
    lines = [
        speed_line(ok, optimizer),
        gradients_line(studies),
        scaler_line(studies),
        scaler_cost_line(ok, optimizer, env),
        bf16_fp16_line(ok, optimizer, env),
        bf16_line(studies),
        learning_line(studies),
        *fastest_lines(ok, studies, optimizer),
        float8_line(ok, timing.float8_unconverted(rows)),
        memory_line(ok),
    ]
    return [heading(env, sources), "", *(line for line in lines if line)]
