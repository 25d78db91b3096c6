"""What a time-to-quality study's report (`bench.publish.quality`) says of its seeds beyond the
recipe table: what the seeds the margin rule needs would cost, from the study's own step times,
and a sequential study's looks (the look that decided each recipe, or the seeds it would need)."""

from __future__ import annotations

from bench.publish.tables import figure
from bench.verdicts import sequential
from bench.verdicts import training as rules


def extra_seeds(s: dict) -> str:
    """What the seeds the rule needs would cost, from this study's step times."""
    mg, cfg = s["margin"], s["cfg"]
    timing = s["tables"]["timing"]
    ok = timing[timing["status"] == "ok"]
    if mg is None or mg.enough or ok.empty:
        return ""
    if mg.seeds_needed > rules.MAX_SEEDS:
        return (
            " No seed count within reach decides at this margin: fp32's seeds spread too wide "
            "against 1% of its loss."
        )
    more = mg.seeds_needed - mg.seeds
    step_s = float(ok["step_ms"].sum()) / 1e3 * cfg.steps
    return (
        f" {more} more seed{'s' if more > 1 else ''} of every recipe: about "
        f"{figure(more * step_s / 60)} min of device time (computed: steps × step times"
        f"{', if no run stops early' if cfg.patience else ''})."
    )


def looks(s: dict) -> list[str]:
    """A sequential study's looks, and per recipe the look that decided it or the seeds it
    would need."""
    cfg, looks, judged = s["cfg"], s["looks"], s["judged"]
    if not cfg.sequential:
        return []
    if not looks:
        return [f"**Looks**: none judged yet (cap {cfg.max_seeds} seeds); --resume goes on.", ""]
    design = sequential.Design(len(cfg.seeds), cfg.max_seeds)
    per = []
    for m, j in judged.items():
        if j.decided:
            per.append(f"{m} at {j.seeds} seeds ({rules.confidence_of(j.level)} interval)")
        elif j.verdict.needed:
            count = (
                f"more than {rules.MAX_SEEDS}"
                if j.verdict.needed > rules.MAX_SEEDS
                else j.verdict.needed
            )
            per.append(f"{m} not known at {j.seeds} seeds, would need {count} a side")
    return [
        f"**Looks**: at {', '.join(map(str, looks))} seeds of a cap of {cfg.max_seeds}; each "
        f"look judged at its own level ({design.spending}-type alpha spending, "
        f"{design.alpha:.0%} a side over every look), so the error rate holds over the looks. "
        f"{'; '.join(per)}.",
        "",
    ]
