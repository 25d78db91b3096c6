"""The verdicts of a timing run (`bench.verdicts.timing`), each on rows built here where the old
rule gave the wrong answer: the lowest median named fastest inside the noise, GradScaler's cost
read off a run that timed each case once, a float8 row that converted nothing ranked."""

import pandas as pd
import pytest

from bench.verdicts import timing


def _rows(*rows: tuple) -> pd.DataFrame:
    """(mode, variant, median, p10, p90, iqr, noisy) per row."""
    cols = ["mode", "variant", "total_ms", "total_ms_p10", "total_ms_p90", "total_ms_iqr", "noisy"]
    return pd.DataFrame([dict(zip(cols, r, strict=True)) for r in rows])


def test_two_rows_two_ms_apart_inside_each_others_noise_are_tied():
    # Medians 20 and 22 ms, IQRs of 3 and 9 ms: the lowest median alone says nothing.
    rows = _rows(
        ("bf16-amp", "compile", 22.0, 18.0, 30.0, 9.0, True),
        ("bf16-pure", "compile", 20.0, 18.5, 23.0, 3.0, True),
        ("fp32", "eager", 80.0, 79.0, 81.0, 1.0, False),
    )
    assert rows.loc[rows["total_ms"].idxmin(), "mode"] == "bf16-pure"  # the old rule's answer
    f = timing.fastest(rows)
    assert f.tie and f.modes == ("bf16-pure", "bf16-amp")
    assert f.first["mode"] == "bf16-pure"
    assert f.reason.startswith("p10–p90 overlap")
    assert "fp32" not in set(f.rows["mode"])


def test_a_noisy_fastest_row_cannot_win_alone():
    # Its p10-p90 clears the runner-up's, but its IQR is 8% of its median.
    rows = _rows(
        ("bf16-pure", "eager", 10.0, 9.9, 10.1, 0.8, True),
        ("bf16-amp", "eager", 12.0, 11.9, 12.1, 0.1, False),
        ("fp32", "eager", 40.0, 39.9, 40.1, 0.1, False),
    )
    f = timing.fastest(rows)
    assert f.tie and f.modes == ("bf16-pure", "bf16-amp")
    assert f.reason == "the fastest is noisy: IQR 8.0% of its median"
    quiet = rows.assign(noisy=False)
    alone = timing.fastest(quiet)
    assert not alone.tie and alone.modes == ("bf16-pure",)
    assert alone.reason == "its p10–p90 (9.9–10.1 ms) clears the runner-up's (11.9–12.1 ms)"


def test_every_row_inside_the_fastests_interval_is_named_not_only_the_next():
    # bf16-amp's median is second but its interval is clear; fp16-amp's is third but wide.
    rows = _rows(
        ("bf16-pure", "compile", 10.0, 9.8, 10.5, 0.2, False),
        ("bf16-amp", "compile", 10.8, 10.7, 10.9, 0.1, False),
        ("fp16-amp", "eager", 11.0, 10.4, 13.0, 0.4, False),
    )
    f = timing.fastest(rows)
    assert f.tie and f.modes == ("bf16-pure", "fp16-amp")


def test_rows_without_p10_and_p90_fall_back_to_the_iqr_and_say_so():
    rows = _rows(
        ("bf16-pure", "eager", 20.0, None, None, 3.0, False),  # 18.5-21.5
        ("bf16-amp", "eager", 22.0, None, None, 3.0, False),  # 20.5-23.5
    )
    f = timing.fastest(rows)
    assert f.tie and f.reason == "median ± IQR/2 (no p10/p90 recorded) overlap"
    apart = rows.assign(total_ms_iqr=1.0)
    f = timing.fastest(apart)
    assert not f.tie and f.reason.startswith("its median ± IQR/2 (no p10/p90 recorded) (19.5–")
    assert timing.interval(rows.iloc[0]) == (18.5, 21.5, timing.IQR_HALF)


def test_one_row_is_the_fastest_and_no_row_is_an_error():
    one = _rows(("fp32", "eager", 5.0, 4.0, 6.0, 1.0, True))
    assert not timing.fastest(one).tie
    with pytest.raises(ValueError, match="no row has a step time"):
        timing.fastest(one.iloc[0:0])


# ---- GradScaler's cost ------------------------------------------------------------------


def _pair(rounds: int | None = None, **extra: object) -> pd.DataFrame:
    rows = _rows(
        ("fp16-amp", "eager", 11.0, 10.9, 11.1, 0.1, False),
        ("fp16-amp-noscale", "eager", 10.0, 9.9, 10.1, 0.1, False),
    ).assign(parallel="none", world_size=1, **extra)
    return rows if rounds is None else rows.assign(rounds=rounds)


def _env(rounds: int = 1, **config: object) -> dict:
    return {"kind": "timing", "config": {"rounds": rounds, "world_size": 1, **config}}


def test_a_scaler_cost_only_from_rounds_interleaved_in_one_process():
    # The old rule printed 10.0% from any two rows; a run of one round timed each case once.
    assert "`--rounds 1`" in timing.scaler_cost_reason(_env(rounds=1), _pair())
    assert timing.scaler_cost_reason({"config": {}}, _pair()) is not None  # an older folder
    assert timing.scaler_cost_reason(_env(rounds=3), _pair(rounds=3)) is None
    # Rounds in env.json, but rows not written by them (a row from another pass): not known.
    assert timing.scaler_cost_reason(_env(rounds=3), _pair()) is not None
    several = timing.scaler_cost_reason(_env(world_size=2), _pair())
    assert several.startswith("a run of several ranks")
    ddp = timing.scaler_cost_reason(_env(rounds=3), _pair(rounds=3).assign(parallel="ddp"))
    assert ddp.startswith("a run of several ranks")
    study = timing.scaler_cost_reason({"kind": "numerics"}, _pair(rounds=3))
    assert study.startswith("these are a numerics folder's step times")


def test_overlapping_intervals_leave_the_sign_inside_the_noise():
    scaled, bare = _pair().iloc[0], _pair().iloc[1]
    assert not timing.overlap(scaled, bare)
    wide = scaled.copy()
    wide["total_ms_p10"] = 10.05
    assert timing.overlap(wide, bare) and timing.overlap(bare, wide)


# ---- float8 that converts no Linear -----------------------------------------------------


def test_a_float8_plan_that_converts_nothing_is_unsupported_with_each_reason():
    plan = {
        "fc1": "kept: too small for rowwise (in 1024 ≤ 1024)",
        "head": "kept: the output head stays in higher precision",
    }
    assert timing.float8_unsupported_reason(plan, "gpt") == (
        "float8 converts no Linear of gpt: fc1 kept: too small for rowwise (in 1024 ≤ 1024); "
        "head kept: the output head stays in higher precision"
    )
    assert timing.float8_unsupported_reason({**plan, "fc2": "converted"}, "gpt") is None
    assert timing.float8_unsupported_reason({}, "cnn") == (
        "float8 converts no Linear of cnn: it has none"
    )
    many = {f"h.{i}.mlp": f"kept: too small for rowwise (out {i} ≤ 2048)" for i in range(6)}
    assert timing.float8_unsupported_reason({**many, **plan}, "gpt").endswith(
        ": 7 kept: too small for rowwise; 1 kept: the output head stays in higher precision"
    )


def test_an_old_ok_float8_row_that_converted_nothing_becomes_unsupported():
    listed = "fc1 kept: too small for rowwise (in 1024 ≤ 1024); head kept: the output head"
    rows = pd.DataFrame(
        [
            {"mode": "fp8-rowwise", "model": "gpt", "status": "ok", "fp8_linears": listed},
            {"mode": "fp8-tensorwise", "model": "gpt", "status": "ok"}
            | {"fp8_linears": "fc1 converted; head kept: the output head"},
            {"mode": "bf16-amp", "model": "gpt", "status": "ok", "fp8_linears": ""},
        ]
    )
    out = timing.float8_as_unsupported(rows)
    assert list(out["status"]) == ["unsupported", "ok", "ok"]
    assert out.loc[0, "error"] == (
        "fp8-rowwise: float8 converts no Linear of gpt: fc1 kept: too small for rowwise (in "
        "1024 ≤ 1024); head kept: the output head"
    )
    assert list(rows["status"]) == ["ok", "ok", "ok"]  # the rows given are left as they were
    assert [timing.converts_nothing(r) for _, r in out.iterrows()] == [True, False, False]
    old_reason = {"mode": "fp8-rowwise", "status": "unsupported"}
    old_reason["error"] = "fp8-rowwise: no Linear of resnet50 is convertible: fc kept: the head"
    assert timing.converts_nothing(pd.Series(old_reason))
    assert timing.plan_of(listed) == {
        "fc1": "kept: too small for rowwise (in 1024 ≤ 1024)",
        "head": "kept: the output head",
    }


def test_the_report_tables_gradscalers_cost_case_by_case():
    from bench.publish import scaler_cost
    from bench.store import results

    def row(mode: str, bs: int, ms: float, p10: float, p90: float) -> dict:
        axes = {a: None for a in results.axes()}
        return axes | {
            "mode": mode, "batch_size": bs, "optimizer": "fused", "variant": "eager",
            "status": "ok", "total_ms": ms, "total_ms_p10": p10, "total_ms_p90": p90,
            "skipped_steps": 0,
        }  # fmt: skip

    df = pd.DataFrame(
        [
            row("fp16-amp", 256, 9.0, 8.8, 9.3),  # 20% over, spans apart: slower
            row("fp16-amp-noscale", 256, 7.5, 7.4, 7.7),
            row("fp16-amp", 4096, 15.1, 14.0, 16.0),  # spans overlap: tied
            row("fp16-amp-noscale", 4096, 15.0, 14.5, 15.5),
            row("bf16-amp", 256, 7.0, 6.9, 7.1),  # no pair: no row
        ]
    )
    env = {"kind": "timing", "config": {"rounds": 1}}
    table = scaler_cost.table(df, env)
    assert list(table["batch"]) == [256, 4096]
    assert list(table["verdict"]) == ["slower", "tied within noise"]
    assert table.loc[0, "with / without"] == pytest.approx(1.2)
    (heading, _, legend, _, body, _) = scaler_cost.section(df, env)
    assert f"{timing.RUN_RATIO_SPAN[1]:.4g}" in legend
    assert heading == "## What GradScaler costs" and "slower" in body
    assert scaler_cost.section(df[df["mode"] != "fp16-amp"], env) == []
