"""Blocks of README.md and docs/*.md generated from run folders: `python -m bench readme [--check]`.

A generated block sits between two markers, the opening one naming what it holds and where from:

    <!-- ampbench:KIND RUN [KEY=VALUE ...] -->
    ...generated, never edited by hand...
    <!-- /ampbench:KIND -->

RUN is a run folder, relative to the file's folder (the project root for README.md, `../results/`
from docs/), so the marker is the one place that names it. KIND is
- `summary`: the answer in a few lines (`bench.publish.summary`), from a timing run and the numerics
  studies that `numerics=NAME+NAME` names (folders beside RUN; each line reads the first study
  with its data), with links to their reports (options `optimizer=NAME`, and `skip=Word,Word`,
  which leaves out the bullets whose bold lead starts with one of those words: `skip=Memory`);
- `headline`: the timing headline of a run, `bench.publish.report.headline` (options `batch_size=N`,
  `optimizer=NAME`);
- `answer`: the Answer of a numerics study, as its report renders it
  (`bench.numerics.render.answer`), quoted paragraph by paragraph; `only=Word,Word` keeps the
  paragraphs whose bold heading starts with one of those words (`only=Divergence,Why`);
- `table`: any columns of a timing run's rows (`columns=a,b,c`; every other KEY=VALUE keeps the
  rows whose column KEY reads VALUE), for tables to come;
- `variants`: the fastest execution variant per mode and batch size (`optimizer=NAME`;
  `with=RUN2+RUN3` adds runs of other variants, folders beside RUN);
- `maxbatch`: the largest-batch table of a `maxbatch` folder;
- `recipes`: the fastest mode and variant per batch size of a timing run (`optimizer=NAME`;
  `bench.publish.variants`);
- `scaling`: the scaling efficiency per mode and parallelism of a run of several ranks
  (`optimizer=NAME`; `with=RUN2` adds a run on another GPU count as columns);
- `zoo`: which recipe for which model, a row per timing run (RUN and `with=RUN2+RUN3`, one
  model each) with the numerics studies of its model among `numerics=NAME+NAME`
  (`bench.publish.zoo`).

Every block but the summary (whose first line names its folders) opens with "From [RUN](its
report.md):", and the runs `with=` adds (a zoo names each run by its model); every kind also
takes `figure=NAME.png[+NAME.png]`: figures of RUN's folder, embedded after the content. So a
link or a figure follows its block's folder, and re-pointing a block is an edit of its marker
alone.

`readme` rewrites every block from its run's files, in a README.md and in the pages of the
docs/ folder beside it; `readme --check` says which blocks disagree with their run, so a table
cannot drift from its data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import pandas as pd

from bench.faults import UsageError
from bench.publish import columns, findings, ranks, report, tables, variants
from bench.store import paths, results

# Markers count only at the start of a line, so that prose may quote them (`<!-- ampbench:...`).
MARKER = re.compile(
    r"^<!-- ampbench:(?P<kind>[\w-]+)(?P<args>(?: [^>]*?)?) -->\n(?P<body>.*?)"
    r"^<!-- /ampbench:(?P=kind) -->",
    re.S | re.M,
)
OPENING = re.compile(r"^<!-- ampbench:[\w-]+", re.M)


@dataclass(frozen=True)
class Block:
    kind: str
    run: str
    options: dict[str, str]
    body: str
    """The text between the markers, as the file holds it."""
    line: int
    """Line of the opening marker, from 1."""
    page: str = ""
    """The file the block is in, relative to the README that brought it; empty for the README's
    own blocks (or a file given alone)."""

    @property
    def label(self) -> str:
        where = f"{self.page} " if self.page else ""
        return f"{where}line {self.line}: ampbench:{self.kind} {self.run}"


def blocks(text: str) -> list[Block]:
    """Every generated block of `text`, in order. An opening marker without its closing one is
    bad input, named by its line."""
    found = []
    for m in MARKER.finditer(text):
        words = m["args"].split()
        line = text.count("\n", 0, m.start()) + 1
        if not words:
            raise UsageError(f"line {line}: ampbench:{m['kind']} names no run folder")
        options = {}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep:
                raise UsageError(
                    f"line {line}: option {word!r} of ampbench:{m['kind']} is not KEY=VALUE"
                )
            options[key] = value
        found.append(Block(m["kind"], words[0], options, m["body"], line))
    if len(OPENING.findall(text)) != len(found):
        opened = {text.count("\n", 0, m.start()) + 1 for m in OPENING.finditer(text)}
        lost = sorted(opened - {b.line for b in found})
        raise UsageError(
            f"line {lost[0] if lost else '?'}: an ampbench marker has no closing marker"
        )
    return found


def _headline(run: Path, options: dict[str, str], link: str) -> str:
    unknown = set(options) - {"batch_size", "optimizer"}
    if unknown:
        raise UsageError(
            f"ampbench:headline takes batch_size= and optimizer=, not {sorted(unknown)[0]}="
        )
    bs = options.get("batch_size")
    return report.headline(
        results.load(run),
        batch_size=int(bs) if bs else None,
        optimizer=options.get("optimizer", "fused"),
    )


def _answer(run: Path, options: dict[str, str], link: str) -> str:
    from bench.numerics.measure import tables
    from bench.numerics.render import answer

    only = options.pop("only", None)
    if options:
        raise UsageError(f"ampbench:answer takes only only=, got {sorted(options)[0]}=")
    t = tables.load(run)
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
    """The rows of `run` and of the runs its `with=RUN2+RUN3` names (folders beside it), for a
    block kind whose options are `optimizer=` and `with=`."""
    unknown = set(options) - {"optimizer", "with"}
    if unknown:
        raise UsageError(f"ampbench:{kind} takes optimizer= and with=, not {sorted(unknown)[0]}=")
    runs = [run] + [run.parent / name for name in options.get("with", "").split("+") if name]
    for other in runs[1:]:
        if not (other / results.ENV).is_file():
            raise UsageError(f"ampbench:{kind}: {other.name} is not a run folder")
    return pd.concat([results.load(r) for r in runs], ignore_index=True)


def _variants(run: Path, options: dict[str, str], link: str) -> str:
    """The fastest variant per mode and batch size; `with=RUN2+RUN3` adds the rows of other runs
    (variants measured in a folder of their own)."""
    df = _rows_with("variants", run, options)
    return variants.best_variant_table(df, options.get("optimizer", "fused"))


def _recipes(run: Path, options: dict[str, str], link: str) -> str:
    """The fastest mode and variant per batch size of a timing run."""
    unknown = set(options) - {"optimizer"}
    if unknown:
        raise UsageError(f"ampbench:recipes takes optimizer=, not {sorted(unknown)[0]}=")
    return variants.fastest_recipe_table(results.load(run), options.get("optimizer", "fused"))


def _scaling(run: Path, options: dict[str, str], link: str) -> str:
    """The scaling efficiency per mode and parallelism of a run of several ranks; `with=RUN2`
    adds the columns of a run on another GPU count."""
    df = _rows_with("scaling", run, options)
    optimizer = options.get("optimizer", "fused")
    try:
        table = ranks.scaling_table(df, optimizer)
    except ValueError as exc:
        raise UsageError(f"ampbench:scaling {run.name}: {exc}") from exc
    return f"Scaling efficiency (%), {optimizer} Adam:\n\n{table}"


def _maxbatch(run: Path, options: dict[str, str], link: str) -> str:
    """The largest-batch table of a `maxbatch` folder."""
    from bench.publish import maxbatch

    if options:
        raise UsageError(f"ampbench:maxbatch takes no option, got {sorted(options)[0]}=")
    limit = results.read_env(run)["maxbatch_config"]["limit"]
    table = maxbatch.summarize_trials(
        pd.DataFrame(results.read_jsonl(run / maxbatch.TRIALS)), limit
    )
    headers = {
        "mode": "mode",
        "largest_batch": "largest batch",
        "samples_per_s": "samples/s there",
        "peak_alloc_gib": "peak GiB there",
        "limited_by": "limited by",
    }
    return tables.markdown(table[list(headers)].rename(columns=headers))


def _summary(run: Path, options: dict[str, str], link: str) -> str:
    """The answer in a few lines from a timing run and the numerics studies beside it."""
    from bench.numerics.measure import tables as study_tables
    from bench.publish import summary

    unknown = set(options) - {"numerics", "optimizer", "skip"}
    if unknown:
        raise UsageError(
            f"ampbench:summary takes numerics=, optimizer= and skip=, not {sorted(unknown)[0]}="
        )
    names = [n for n in options.get("numerics", "").split("+") if n]
    for name in names:
        if not (run.parent / name / study_tables.AUDIT_JSON).is_file():
            raise UsageError(f"ampbench:summary: {name} is not a finished numerics study")
    studies = [study_tables.load(run.parent / name) for name in names]
    here = PurePosixPath(link).parent
    sources = [_report(run, link, "timing run")] + [
        _report(
            run.parent / n, str(here / n), "numerics study" + (f" {i}" if len(names) > 1 else "")
        )
        for i, n in enumerate(names, 1)
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
    if options:
        raise UsageError(f"ampbench:found takes no options, got {sorted(options)[0]}=")
    df = results.load(run)
    return "\n".join(findings.findings(df, report.headline_optimizer(df)))


def _zoo(run: Path, options: dict[str, str], link: str) -> str:
    """Which recipe for which model: a row per timing run (RUN and `with=`), each with the
    numerics studies of its model and preset among `numerics=` (`bench.publish.zoo`)."""
    from bench.numerics.measure import tables as study_tables
    from bench.publish import zoo

    unknown = set(options) - {"with", "numerics", "optimizer"}
    if unknown:
        raise UsageError(
            f"ampbench:zoo takes with=, numerics=, optimizer=, not {sorted(unknown)[0]}="
        )
    runs = [run] + [run.parent / n for n in options.get("with", "").split("+") if n]
    names = [n for n in options.get("numerics", "").split("+") if n]
    for folder in [*runs[1:], *(run.parent / n for n in names)]:
        if not (folder / results.ENV).is_file():
            raise UsageError(f"ampbench:zoo: {folder.name} is not a run folder")
    studies = [study_tables.load(run.parent / n) for n in names]
    models = [(rows, zoo.studies_of(rows, studies)) for rows in map(results.load, runs)]
    expected = [results.read_env(r).get("expected_cases") for r in runs]
    return "\n".join(zoo.table(models, options.get("optimizer", "fused"), expected))


KINDS = {
    "summary": _summary,
    "zoo": _zoo,
    "found": _found,
    "headline": _headline,
    "answer": _answer,
    "table": _rows_table,
    "variants": _variants,
    "maxbatch": _maxbatch,
    "recipes": _recipes,
    "scaling": _scaling,
}


def _report(folder: Path, link: str, text: str | None = None) -> str:
    """A markdown link to a folder's report.md (to the folder where it has none), `link` being
    the folder as the page reaches it."""
    target = f"{link}/{results.REPORT}" if (folder / results.REPORT).is_file() else link
    return f"[{text or f'`{folder.name}`'}]({target})"


SOURCE_TEXT: dict[str, Callable[[Path], str]] = {
    "zoo": lambda run: f"`{results.load(run)['model'].iloc[0]}`",
}
"""Kinds whose From line names each run otherwise than by its folder: a zoo's by its model, as
its rows do (eight folder names would take a paragraph of the README)."""


def _source(run: Path, link: str, options: dict[str, str], kind: str) -> str:
    """The line that opens a block, From [RUN](its report): with the runs `with=` adds, so the
    block's text links the folders its marker names and no prose has to."""
    here = PurePosixPath(link).parent
    others = [n for n in options.get("with", "").split("+") if n]
    text = SOURCE_TEXT.get(kind, lambda folder: None)
    shown = [_report(run, link, text(run))] + [
        _report(run.parent / n, str(here / n), text(run.parent / n)) for n in others
    ]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    return f"From {listed}:"


def _figures(run: Path, link: str, names: str) -> str:
    """Markdown images of `names` (`a.png+b.png`), figures in the folder `run` that `link`
    reaches from the page."""
    shown = []
    for name in names.split("+"):
        if not (run / name).is_file():
            raise UsageError(f"figure={name}: no such file in {run.name}")
        shown.append(f"![{PurePosixPath(name).stem}]({link}/{name})")
    return "\n\n".join(shown)


def generate(block: Block, root: Path = paths.ROOT) -> str:
    """What `block` should hold: marker to marker, the content with a blank line either side."""
    if block.kind not in KINDS:
        raise UsageError(f"{block.label}: unknown kind; choose from {', '.join(KINDS)}")
    run = root / block.run
    if not (run / results.ENV).is_file():
        raise UsageError(f"{block.label}: {block.run} is not a run folder (no {results.ENV})")
    options = dict(block.options)
    figures = options.pop("figure", None)
    content = KINDS[block.kind](run, dict(options), block.run)
    if block.kind != "summary":  # the summary names its folders in its own first line
        content = f"{_source(run, block.run, options, block.kind)}\n\n{content}"
    if figures is not None:
        content += "\n\n" + _figures(run, block.run, figures)
    return f"\n{content}\n\n"


def regenerate(text: str, root: Path = paths.ROOT) -> tuple[str, list[Block]]:
    """`text` with every block filled from its run, and the blocks whose text changed."""
    changed = []
    out, last = [], 0
    for block, m in zip(blocks(text), MARKER.finditer(text), strict=True):
        body = generate(block, root)
        if body != block.body:
            changed.append(block)
        out += [text[last : m.start("body")], body]
        last = m.end("body")
    out.append(text[last:])
    return "".join(out), changed


DOCS = "docs"
"""The folder beside a README.md whose pages (`*.md`) `update` fills with it."""


def pages(path: Path) -> list[Path]:
    """The files `update(path)` fills: `path`, and for a README.md the docs/*.md beside it."""
    docs = path.parent / DOCS
    extra = sorted(docs.glob("*.md")) if path.name == "README.md" and docs.is_dir() else []
    return [path, *extra]


def update(path: Path, *, check: bool = False) -> list[Block]:
    """Fill the blocks of `path` from their runs, and for a README.md those of the docs/*.md
    pages beside it (with `check`, only compare); returns the blocks that disagreed with their
    run, a page's named by its path from the README's folder. Every file is checked before any
    is written, so bad input changes nothing."""
    writes, changed = [], []
    for page in pages(path):
        text = page.read_text()
        name = "" if page == path else page.relative_to(path.parent).as_posix()
        try:
            new, stale = regenerate(text, page.parent)
        except UsageError as exc:
            raise UsageError(f"{name}: {exc}" if name else str(exc)) from exc
        changed += [replace(b, page=name) for b in stale]
        if stale:
            writes.append((page, new))
    if not check:
        for page, new in writes:
            page.write_text(new)
    return changed
