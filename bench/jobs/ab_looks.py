"""`ab`'s stopping rule: the rounds so far judged as `compare` judges them
(`bench.verdicts.rounds.judge_rounds`, with the look's share of alpha), and whether every case
is decided."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from bench.store import results
from bench.verdicts import rounds


def rounds_so_far(folder: Path, done: list[dict]) -> list[tuple[object, list, list]]:
    """Per case that passed in a round of each side: its mode and each side's rounds (arrays of
    step times, ms), from the run folders `done` (env.json's `rounds`) names."""
    found: dict[str, dict] = {}
    for entry in done:
        if not entry.get("folder"):
            continue
        run = folder / entry["folder"]
        timed = {r["case_id"]: r for r in results.read_rows(run / results.SAMPLES)}
        for row in results.read_rows(run / results.ROWS):
            rec = timed.get(row["case_id"]) if row.get("status") == "ok" else None
            steps = rec["samples_ms"].get("total", []) if rec else []
            case = found.setdefault(row["case_id"], {"mode": row.get("mode"), "A": [], "B": []})
            if len(steps):
                case[entry["side"]].append(np.asarray(steps, dtype=float))
    return [(c["mode"], c["A"], c["B"]) for c in found.values() if c["A"] and c["B"]]


def look(folder: Path, done: list[dict], cfg) -> dict[str, object]:
    """One look at the rounds so far (`cfg`: the comparison's `AbConfig`): the rounds a side, the
    verdicts' counts, and whether every case is decided."""
    cases = rounds_so_far(folder, done)
    judged = rounds.judge_rounds(
        cases,
        min_effect=cfg.min_effect,
        confidence=cfg.confidence,
        statistic=cfg.statistic,
        looks=cfg.looks,
    )
    words = [str(v["verdict"]) for v in judged]
    sides = Counter(e["side"] for e in done if e.get("folder"))
    return {
        "rounds_a": sides["A"],
        "rounds_b": sides["B"],
        "cases": len(words),
        "verdicts": dict(Counter(words)),
        "decided": bool(words) and rounds.decided(words),
    }


def reason(looked: dict[str, object] | None, cfg, rounds: int) -> str:
    """Why the rounds stopped where they did, in one sentence."""
    if looked is not None and looked["decided"]:
        return (
            f"every case decided after {rounds} rounds a side (faster, slower or same after "
            f"the family's correction, each look at {(1 - cfg.confidence) / cfg.looks:.2g})"
        )
    if cfg.min_rounds >= cfg.rounds:
        many = f"{cfg.rounds} round{'s' if cfg.rounds != 1 else ''}"
        return f"a fixed {many} a side (`--min-rounds` at the cap: no early stop)"
    left = "" if looked is None else f", {looked['cases'] - _decided(looked)} case(s) still unclear"
    return f"the cap of {cfg.rounds} rounds a side (`--rounds`){left}"


def _decided(looked: dict[str, object]) -> int:
    counts = looked["verdicts"]
    return sum(n for word, n in counts.items() if word in rounds.DECIDED)
