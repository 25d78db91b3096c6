"""Rendering a folder of any kind from its files alone (`ampbench report`), and `after_job`: what a
command does once its job has written a folder (render, print the headline, refresh the index)."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.faults import UsageError
from bench.numerics.render import study
from bench.publish import ab, index, maxbatch, report
from bench.quality.render import report as quality
from bench.store import results, schema
from bench.store.run_env import RunEnv


def kind(run_dir: Path) -> str:
    """The folder's kind (`bench.store.schema.KINDS`); one line when it is not a results folder."""
    if not (run_dir / results.ENV).is_file() and not (run_dir / schema.AUDIT_JSON).is_file():
        raise UsageError(f"{run_dir} is not a results folder (no {results.ENV})")
    env = results.read_env(run_dir) if (run_dir / results.ENV).is_file() else RunEnv()
    found = schema.kind_of(env, run_dir)
    if found is None:
        raise UsageError(f"{run_dir}: its {results.ENV} does not say what kind of run it is")
    return found


def render(run_dir: Path) -> Path:
    """Re-render the folder's report (and figures) from its files; returns the report's path."""
    found = kind(run_dir)
    if found == "numerics":
        return study.render(run_dir)
    if found == "maxbatch":
        return maxbatch.render(run_dir)
    if found == "quality":
        return quality.render(run_dir)
    if found == "ab":
        ab.write(run_dir)
        return run_dir / results.REPORT
    report.write(run_dir)
    return run_dir / results.REPORT


def after_job(run_dir: Path) -> None:
    """After a job wrote `run_dir`: render it, show a timing run's headline, refresh the index."""

    path = render(run_dir)
    if kind(run_dir) == "timing":
        sub = run_dir / results.NUMERICS_DIR  # the short study of `run --numerics`, if any
        if (sub / results.ENV).is_file():
            print(f"ampbench: wrote {render(sub)}", file=sys.stderr, flush=True)
        print(report.headline(results.load(run_dir)), file=sys.stderr)
    print(f"ampbench: wrote {path}", file=sys.stderr, flush=True)
    index.refresh(run_dir)
