"""The numerics report's Answer: every sentence computed from the tables, modes picked by
`bench.ground.catalog`, never by name; each threshold stated in its `sentences` module."""

from __future__ import annotations

import pandas as pd

from bench.ground.catalog import fp16_pair
from bench.numerics.analysis.runs import LOSS_GAP
from bench.numerics.render.sentences import beyond, bf16, divergence, dtypes, scaler
from bench.numerics.render.sentences.bf16 import bf16_against_fp16_error, lost_direction
from bench.numerics.render.sentences.scaler import FLUSH_LIMIT

__all__ = ["FLUSH_LIMIT", "LOSS_GAP", "answer", "bf16_against_fp16_error", "lost_direction"]
"""`answer`, and what the README's summary quotes beside it, so that the two never disagree."""


def answer(tables: dict, torch_version: str) -> list[str]:
    """The Answer's paragraphs, from the tables of `bench.numerics.measure.tables.load`."""
    scaled, _ = fp16_pair()
    found = tables["audit_json"]
    chain, chained = found["chains"].get(scaled, []), found.get("chained", "")
    census, summary = tables["census"], tables["summary"]
    # Tables a caller may leave out (a test's tables; `load` always gives them): empty.
    traces, steps, runs = (
        t if t is not None else pd.DataFrame() for t in map(tables.get, ("traces", "steps", "runs"))
    )
    return [
        *dtypes.dtype_sentences(
            tables["audit"], chain, chained, torch_version, found.get("unsupported", {}).get(scaled)
        ),
        *scaler.underflow_sentences(census, summary),
        *divergence.learning_sentences(summary, runs),
        *divergence.divergence_sentences(summary),
        *divergence.mechanism_sentences(traces, summary),
        *divergence.calm_sentences(traces, summary),
        *divergence.horizon_sentences(steps, runs),
        *scaler.verdict_sentences(census, summary),
        # No sentence on GradScaler's cost: the study's workers share the GPUs and time each
        # mode apart (`bench.verdicts.timing.scaler_cost_reason`); `run --rounds N` measures it.
        *bf16.bf16_sentences(census),
        *dtypes.error_sentences(tables["audit_json"]["error_paths"]),
        *beyond.beyond_sentences(summary),
        *beyond.beyond_census_sentences(census),
        *beyond.update_underflow_sentences(traces, census),
    ]
