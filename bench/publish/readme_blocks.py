"""What each kind of generated block holds: one function per kind, (run folder, the marker's
options, the folder as the page links it) -> the block's markdown (docs/comparing.md)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pandas as pd

from bench.faults import UsageError
from bench.numerics.measure.tables import AUDIT_JSON
from bench.numerics.measure.tables import load as load_study
from bench.numerics.render import answer
from bench.publish import columns, findings, maxbatch, ranks, report, summary, variants, zoo
from bench.quality import tables as quality_tables
from bench.quality.render import report as quality
from bench.quality.render import runs as quality_runs
from bench.store import results
from bench.text import tables


def link_to_report(folder: Path, link: str, text: str | None = None) -> str:
    """A markdown link to a folder's report.md (else the folder), as the page reaches it."""
    target = f"{link}/{results.REPORT}" if (folder / results.REPORT).is_file() else link
    return f"[{text or f'`{folder.name}`'}]({target})"


def recorded(folders: list[Path]) -> str:
    """`recorded at commit 933a292` (or `at commits A, B and C`): the code the folders' data
    comes from, every commit a folder was resumed at included (a study's runs too), so that a
    block older than the code it describes says so. It names commits, never compares them with
    the checkout's: a clean clone at any later commit checks the same text."""
    at: list[str] = []
    for folder in folders:
        env = results.read_env(folder)
        runs = quality_tables.load(folder)["runs"] if env.get("kind") == "quality" else None
        at += quality_runs.trained_at(env, runs)
    at = list(dict.fromkeys(at))
    if at == [quality_runs.UNKNOWN_COMMIT]:
        return f"recorded at {at[0]}"
    return f"recorded at commit{'s' if len(at) > 1 else ''} {tables.joined(at)}"


def _takes(kind: str, options: dict[str, str], *allowed: str) -> None:
    """Refuse, in one line, an option the block's kind does not take."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        takes = tables.joined([f"{k}=" for k in allowed]) if allowed else "no option"
        raise UsageError(f"ampbench:{kind} takes {takes}, not {unknown[0]}=")


def _headline(run: Path, options: dict[str, str], link: str) -> str:
    _takes("headline", options, "batch_size", "optimizer")
    bs = options.get("batch_size")
    return report.headline(
        results.load(run),
        batch_size=int(bs) if bs else None,
        optimizer=options.get("optimizer", "fused"),
    )


def _answer(run: Path, options: dict[str, str], link: str) -> str:
    _takes("answer", options, "only")
    only = options.get("only")
    t = load_study(run)
    paragraphs = answer.answer(t, str(t["env"].get("torch")))
    if only is not None:
        # Paragraphs by their bold heading, in the Answer's order: "**Divergence** (...". A
        # heading the Answer lacks is an error, so a quote cannot silently shrink.
        heads = only.split(",")
        missing = [h for h in heads if not any(p.startswith(f"**{h}") for p in paragraphs)]
        if missing:
            raise UsageError(f"ampbench:answer {run.name}: no paragraph {missing[0]!r}")
        paragraphs = [p for p in paragraphs if any(p.startswith(f"**{h}") for h in heads)]
    return "\n>\n".join(f"> {p}" for p in paragraphs)


def _rows_table(run: Path, options: dict[str, str], link: str) -> str:
    df = results.load(run)
    shown = options.pop("columns", ",".join(columns.HEADLINE)).split(",")
    for key, value in options.items():
        if key not in df.columns:
            raise UsageError(f"ampbench:table {run.name}: no column {key!r}")
        df = df[df[key].astype(str) == value]
    missing = [c for c in shown if c not in df.columns]
    if missing:
        raise UsageError(f"ampbench:table {run.name}: no column {missing[0]!r}")
    return tables.markdown(df[shown])


def _rows_with(kind: str, run: Path, options: dict[str, str]) -> pd.DataFrame:
    """The rows of `run` and of the runs its `with=RUN2+RUN3` names (folders beside it)."""
    _takes(kind, options, "optimizer", "with")
    runs = [run] + [run.parent / name for name in options.get("with", "").split("+") if name]
    for other in runs[1:]:
        if not (other / results.ENV).is_file():
            raise UsageError(f"ampbench:{kind}: {other.name} is not a run folder")
    return pd.concat([results.load(r) for r in runs], ignore_index=True)


def _variants(run: Path, options: dict[str, str], link: str) -> str:
    """The fastest variant per mode and batch size; `with=` adds the rows of other runs."""
    df = _rows_with("variants", run, options)
    return variants.best_variant_table(df, options.get("optimizer", "fused"))


def _fastest(run: Path, options: dict[str, str], link: str) -> str:
    """The fastest mode and variant per batch size of a timing run."""
    _takes("modes", options, "optimizer")
    return variants.fastest_table(results.load(run), options.get("optimizer", "fused"))


def _scaling(run: Path, options: dict[str, str], link: str) -> str:
    """Scaling efficiency per mode and parallelism; `with=RUN2` adds another GPU count's."""
    df = _rows_with("scaling", run, options)
    optimizer = options.get("optimizer", "fused")
    try:
        table = ranks.scaling_table(df, optimizer)
    except ValueError as exc:
        raise UsageError(f"ampbench:scaling {run.name}: {exc}") from exc
    return f"Scaling efficiency (%), {optimizer} Adam:\n\n{table}"


def _maxbatch(run: Path, options: dict[str, str], link: str) -> str:
    """The largest-batch table of a `maxbatch` folder."""
    _takes("maxbatch", options)
    limit = results.read_env(run)["maxbatch_config"]["limit"]
    trials = results.frame(results.read_jsonl(run / results.TRIALS))
    table = maxbatch.summarize_trials(trials, limit)
    shown = ["mode", "largest_batch", "samples_per_s", "peak_alloc_gib", "limited_by"]
    return tables.markdown(table[shown].rename(columns=maxbatch.HEADERS))


def _summary(run: Path, options: dict[str, str], link: str) -> str:
    """The answer in a few lines from a timing run and the numerics studies beside it."""
    _takes("summary", options, "numerics", "optimizer", "skip")
    names = [n for n in options.get("numerics", "").split("+") if n]
    for name in names:
        if not (run.parent / name / AUDIT_JSON).is_file():
            raise UsageError(f"ampbench:summary: {name} is not a finished numerics study")
    studies = [load_study(run.parent / name) for name in names]
    here = PurePosixPath(link).parent
    sources = [link_to_report(run, link, "timing run")] + [
        link_to_report(
            run.parent / n, str(here / n), "numerics study" + (f" {i}" if len(names) > 1 else "")
        )
        for i, n in enumerate(names, 1)
    ]
    sources = [
        f"{source} {recorded([folder]).removeprefix('recorded ')}"
        for source, folder in zip(sources, [run, *(run.parent / n for n in names)], strict=True)
    ]
    lines = summary.summary(
        results.load(run),
        results.read_env(run),
        studies,
        sources,
        optimizer=options.get("optimizer", "fused"),
    )
    skipped = [w for w in options.get("skip", "").split(",") if w]
    for word in skipped:
        # A lead the summary lacks is an error, as for `answer`'s only=: a stale marker says so.
        if not any(line.startswith(f"- **{word}") for line in lines):
            raise UsageError(f"ampbench:summary {run.name}: no bullet {word!r} to skip")
    lines = [ln for ln in lines if not any(ln.startswith(f"- **{w}") for w in skipped)]
    return "\n".join(lines)


def _found(run: Path, options: dict[str, str], link: str) -> str:
    """The bullets of "What this run found" in the run's report."""
    _takes("found", options)
    df = results.load(run)
    return "\n".join(findings.findings(df, report.headline_optimizer(df)))


def _zoo(run: Path, options: dict[str, str], link: str) -> str:
    """Which mode for which model: a row per timing run (RUN and `with=`), each with the
    time-to-quality studies of its model among `quality=` (`bench.publish.zoo`)."""
    _takes("zoo", options, "with", "quality", "optimizer")
    runs = [run] + [run.parent / n for n in options.get("with", "").split("+") if n]
    names = [n for n in options.get("quality", "").split("+") if n]
    for folder in [*runs[1:], *(run.parent / n for n in names)]:
        if not (folder / results.ENV).is_file():
            raise UsageError(f"ampbench:zoo: {folder.name} is not a run folder")
    studies = [quality.study(run.parent / n) for n in names]
    models = [(rows, zoo.studies_of(rows, studies)) for rows in map(results.load, runs)]
    expected = [results.read_env(r).get("expected_cases") for r in runs]
    return "\n".join(zoo.table(models, options.get("optimizer", "fused"), expected))


def _quality(run: Path, options: dict[str, str], link: str) -> str:
    """A time-to-quality study's findings (`bench.quality.render.report`)."""
    _takes("quality", options)
    if results.read_env(run).get("kind") != "quality":
        raise UsageError(f"ampbench:quality: {run.name} is not a time-to-quality study")
    return "\n".join(quality.findings(quality.study(run)))


KINDS = {
    "quality": _quality,
    "summary": _summary,
    "zoo": _zoo,
    "found": _found,
    "headline": _headline,
    "answer": _answer,
    "table": _rows_table,
    "variants": _variants,
    "maxbatch": _maxbatch,
    "fastest": _fastest,
    "scaling": _scaling,
}
