"""GradScaler "needed" by the gradient's norm (`bench.verdicts.scaler`), on fixtures built here:
many tiny elements that carry a negligible part of the norm are not harm, a real flushed share of
the norm is; and the numerics study's answer is decided there, not in its sentence."""

import math

import pandas as pd
import torch

from bench.numerics.measure.underflow import census
from bench.verdicts import scaler as scaler_rule
from bench.verdicts import training as rules

FP32 = [1.470, 1.475, 1.480]
SCALED, BARE = "fp16-amp", "fp16-amp-noscale"


def _summary(bare: list[float]) -> pd.DataFrame:
    rows = [
        {"mode": mode, "seed": seed, "initial_loss": 4.2, "best_loss": best, "final_loss": best,
         "status": "ok", "diverged_at_step": math.nan}
        for mode, losses in (("fp32", FP32), (SCALED, FP32), (BARE, bare))
        for seed, best in enumerate(losses)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _check(ref: torch.Tensor, unscaled: torch.Tensor, scaled: torch.Tensor) -> pd.DataFrame:
    """One GradScaler check row of weight `w`, from its fp32 gradient and float16's two."""
    live, norm = ref != 0, ref.norm()

    def share(mask: torch.Tensor) -> float:
        return float(ref[mask].norm() / norm)

    lost, kept = live & (unscaled == 0), live & (unscaled == 0) & (scaled != 0)
    return pd.DataFrame(
        [{"step": 100, "seed": 0, "tensor": "w", "numel": ref.numel(),
          "lost_unscaled": share(lost), "lost_scaled": share(live & (scaled == 0)),
          "kept_by_scaler": share(kept)}]
    )  # fmt: skip


def test_many_tiny_elements_with_a_negligible_norm_share_are_not_harm():
    # 97% of 4096 elements at 1e-8 (below 2**-25: float16 flushes them), the rest at 1e-3. The
    # per-element rule this replaces called that "needed"; their norm share is 0.006%.
    ref = torch.full((4096,), 1e-8)
    ref[:123] = 1e-3
    c = _check(ref, ref.half().float(), (ref * 2**16).half().float() / 2**16)
    assert float((ref.half() == 0).float().mean()) > 0.95  # the elements do flush
    assert c["kept_by_scaler"].item() < 1e-4
    v = scaler_rule.scaler_needed(c, _summary(FP32), SCALED, BARE, synthetic=False)
    assert v.verdict == rules.NOT_NEEDED


def test_a_real_flushed_share_of_the_norm_makes_the_scaler_needed():
    # Half the elements at 1e-8, half at 2e-8: every one flushes without the scaler, all of the
    # norm; the scale keeps them all. Training alike, so the norm alone decides.
    ref = torch.cat([torch.full((2048,), 1e-8), torch.full((2048,), 2e-8)])
    c = _check(ref, ref.half().float(), (ref * 2**16).half().float() / 2**16)
    assert c["kept_by_scaler"].item() == 1.0
    v = scaler_rule.scaler_needed(c, _summary(FP32), SCALED, BARE, synthetic=False)
    assert v.verdict == rules.NEEDED and "100% of w's gradient norm flushes" in v.reason


def test_the_limit_sits_on_the_norm_share_just_past_ten_percent():
    def verdict(kept: float) -> str:
        row = {"step": 0, "seed": 0, "tensor": "w", "numel": 4096}
        c = pd.DataFrame(
            [{**row, "lost_unscaled": kept, "lost_scaled": 0.0, "kept_by_scaler": kept}]
        )
        return scaler_rule.scaler_needed(c, _summary(FP32), SCALED, BARE, synthetic=False).verdict

    assert scaler_rule.FLUSHED_NORM_LIMIT == 0.10
    assert verdict(0.09) == rules.NOT_NEEDED and verdict(0.11) == rules.NEEDED


def _census(bare_norm: float, scaled_norm: float, numel: int = 4096) -> pd.DataFrame:
    return pd.DataFrame(
        [{"mode": m, "batch_size": 64, "step": 0, "tensor": "w", "numel": numel,
          "flushed": 0.9, "flushed_norm": n}
         for m, n in ((BARE, bare_norm), (SCALED, scaled_norm))]
    )  # fmt: skip


def test_the_numerics_answer_is_decided_by_divergence_or_the_norm_not_by_elements():
    word, need, _ = scaler_rule.numerics_scaler_needed(
        _census(0.0, 0.0), {BARE: {1024}}, SCALED, BARE
    )
    assert (word, need) == (rules.NEEDED, [1024])
    # 90% of the elements flushed, 0.5% of the norm: not known, never needed.
    word, _, why = scaler_rule.numerics_scaler_needed(_census(0.005, 0.0), {}, SCALED, BARE)
    assert word == rules.NOT_KNOWN and "0.5% of w's gradient norm" in why
    word, _, why = scaler_rule.numerics_scaler_needed(_census(0.3, 0.0), {}, SCALED, BARE)
    assert word == rules.NEEDED and "30% of w's gradient norm flushes" in why
    # A census older than the norm column: not known, and it says what is missing.
    old = _census(0.3, 0.0).assign(flushed_norm=math.nan)
    word, _, why = scaler_rule.numerics_scaler_needed(old, {}, SCALED, BARE)
    assert word == rules.NOT_KNOWN and "did not record the share of each gradient's norm" in why


def test_the_census_norm_share_feeds_the_rule():
    ref = torch.cat([torch.full((2048,), 1e-8), torch.ones(2048)])
    row = census(ref.half(), ref)
    assert row["flushed"] == 0.5 and row["flushed_norm"] < 1e-6


def test_a_check_at_a_scale_that_overflowed_says_so():
    row = {"seed": 0, "tensor": "w", "numel": 4096, "lost_unscaled": 0.2, "lost_scaled": 0.05,
           "kept_by_scaler": 0.15}  # fmt: skip
    c = pd.DataFrame([{**row, "step": 0, "overflow": False}, {**row, "step": 50, "overflow": True}])
    v = scaler_rule.scaler_needed(c, _summary(FP32), SCALED, BARE, synthetic=False)
    assert v.verdict == rules.NEEDED
    assert "at step 50 the scaled gradient overflowed in 1 tensor (" in v.reason
    older = scaler_rule.scaler_needed(
        c.drop(columns="overflow"), _summary(FP32), SCALED, BARE, synthetic=False
    )
    assert "overflowed" not in older.reason
