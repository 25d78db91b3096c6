"""report.md of a numerics folder from its tables: its head, the failed jobs, the sections
(`bench.numerics.render.sections`) and the Answer."""

from __future__ import annotations

import shlex

from bench.ground import cards
from bench.numerics.analysis.runs import LOSS_GAP
from bench.numerics.analysis.summary import DIVERGE_FACTOR, DIVERGE_STEPS, HEALTHY
from bench.numerics.render.answer import answer
from bench.numerics.render.sections.beyond import beyond_section
from bench.numerics.render.sections.dtypes import audit_section
from bench.numerics.render.sections.training import convergence_section
from bench.numerics.render.sections.underflow import census_section, histogram_section
from bench.numerics.render.sentences.scaler import FLUSH_LIMIT
from bench.store import errors, paths
from bench.store.run_env import RunEnv
from bench.text.tables import markdown


def _provenance(env: RunEnv) -> list[str]:
    """The command that started the study and those that resumed it."""
    resumed = [
        shlex.join(["python", "-m", "bench", *paths.shown_argv(r["argv"][1:])])
        for r in env.get("resumed", [])
    ]
    command = paths.shown_command(env.get("command", ""))
    out = ["Produced by:", "", "```", command, *resumed, "```", ""]
    if resumed:
        out += [
            f"Interrupted, then resumed {len(resumed)} time(s) by the command(s) after the first.",
            "",
        ]
    entries = env.get("resumed", [])
    # Each census run replaces every census row: the rows are the last one's.
    last_census = max((i for i, r in enumerate(entries) if r.get("census_again_for")), default=-1)
    for i, r in enumerate(entries):
        at = f"on {r['at']} at commit `{str(r.get('commit'))[:7]}`"
        if r.get("forced"):
            # What `--force` let differ: the jobs after this point ran under the second value.
            out += [
                f"Resumed on {r['at']} with `--force` although the folder was made elsewhere: "
                f"{'; '.join(r['forced'])} (there: the study's first session; here: the "
                "resuming one).",
                "",
            ]
        again = r.get("census_again_for", [])
        if r.get("added_modes"):
            # Before `census_again_for` existed, an addition left the census as it was.
            what = (
                "convergence runs, dtype audit and census"
                if again
                else ("convergence runs and dtype audit; the census was not extended")
            )
            out += [f"Modes {', '.join(r['added_modes'])} were added {at} (their {what}).", ""]
        if again:
            rows = "; every census row (all modes) is from this run" if i == last_census else ""
            out += [
                f"The census ran again {at} for {', '.join(again)}, which it had not "
                f"measured{rows}.",
                "",
            ]
    return out


def render(t: dict) -> str:
    """report.md from the tables of `bench.numerics.measure.tables.load` (their `env` included)."""
    env = t["env"]
    cfg = env.get("numerics_config", {})
    stress = {k: cfg.get(k) for k in ("loss_mult", "reduction", "init_scale")}
    dirty = " (with uncommitted changes)" if env.get("dirty") else ""
    out = [
        f"# ampbench numerics `{env.get('run_name', '')}`",
        "",
        *(
            [
                "**CPU smoke run**: tiny sizes; these figures exercise the code, not the question.",
                "",
            ]
            if env.get("device") == "cpu"
            else []
        ),
        *_provenance(env),
        f"{_where(env, cfg)}, torch {env.get('torch')}"
        f"{', CUDA ' + str(env['cuda']) if env.get('cuda') else ''}, "
        f"commit `{env.get('commit')}`{dirty}. {_model(cfg, env)}. Stress "
        f"settings: {stress}.",
        "",
    ]
    failed = t["failed"]
    if errors.COLUMN in failed and failed[errors.COLUMN].isna().all():  # older than the column
        failed = failed.drop(columns=errors.COLUMN)
    if not failed.empty:
        out += ["## Jobs that failed", "", markdown(failed), ""]
    tracebacks = t["audit_json"].get("tracebacks", {})  # of the modes the audit failed on
    out += errors.where([*failed.get(errors.COLUMN, []), *tracebacks.values()])
    out += audit_section(t) + census_section(t) + histogram_section(t)
    out += convergence_section(t, env) + beyond_section(t)
    out += [
        "## 5. Answer",
        "",
        "Computed from the tables above by `bench/numerics/render/answer.py` (thresholds: "
        f"more than {FLUSH_LIMIT:.0%} of a tensor flushed; a final loss more than {LOSS_GAP:.0%} "
        "above fp32's worst seed"
        + (
            f"; divergence: the loss above {DIVERGE_FACTOR:g}× its running minimum for "
            f"{DIVERGE_STEPS} steps, or non-finite)."
            if not t["traces"].empty or t["summary"]["divergence"].isin([HEALTHY]).any()
            else ")."
        ),
        "",
    ]
    out += [f"{sentence}\n" for sentence in answer(t, str(env.get("torch")))]
    return "\n".join(out)


def _where(env: RunEnv, cfg: dict) -> str:
    """The machine the study ran on: its GPU and workers, or the CPU."""
    if env.get("device") == "cpu":
        return f"CPU {env.get('cpu') or ''}".rstrip()
    return f"GPU {env.get('gpu')} ×{cfg.get('workers')} worker(s)"


def _model(cfg: dict, env: RunEnv) -> str:
    """The study's model: the MLP by its sizes, another workload by name and preset."""
    card = cards.card(cfg.get("model", cards.DEFAULT))
    if card is not None and card.free_sizes:  # its sizes are the record's own
        return f"Model {card.shape.format(**cfg.get('sizes', {}))}"
    what = f": {env['model_description']}" if env.get("model_description") else ""
    return f"Model {cfg['model']}, preset {cfg.get('preset')}{what}"
