"""Tables in README.md generated from run folders: `python -m bench readme [--check]`.

A generated block sits between two markers, the opening one naming what it holds and where from:

    <!-- ampbench:KIND RUN [KEY=VALUE ...] -->
    ...generated, never edited by hand...
    <!-- /ampbench:KIND -->

RUN is a run folder, relative to the file's folder (the project root for README.md). KIND is
- `headline`: the timing headline of a run, `bench.report.headline` (options `batch_size=N`,
  `optimizer=NAME`);
- `answer`: the Answer of a numerics study, as its report renders it (`bench.numerics.answer`),
  quoted paragraph by paragraph; `only=Word,Word` keeps the paragraphs whose bold heading starts
  with one of those words (`only=Divergence,Why`);
- `table`: any columns of a timing run's rows (`columns=a,b,c`; every other KEY=VALUE keeps the
  rows whose column KEY reads VALUE), for tables to come;
- `variants`: the fastest execution variant per mode and batch size (`optimizer=NAME`;
  `with=RUN2+RUN3` adds runs of other variants, folders beside RUN);
- `maxbatch`: the largest-batch table of a `maxbatch` folder;
- `recipes`: the fastest mode and variant per batch size of a timing run (`optimizer=NAME`).

`readme` rewrites every block from its run's files; `readme --check` (and the test suite) says
which blocks disagree with their run, so a table in the README cannot drift from its data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench import paths, report, results
from bench.faults import UsageError

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

    @property
    def label(self) -> str:
        return f"line {self.line}: ampbench:{self.kind} {self.run}"


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


def _headline(run: Path, options: dict[str, str]) -> str:
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


def _answer(run: Path, options: dict[str, str]) -> str:
    from bench.numerics import answer, tables

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


def _rows_table(run: Path, options: dict[str, str]) -> str:
    df = results.load(run)
    columns = options.pop("columns", ",".join(report.HEADLINE_COLUMNS)).split(",")
    for key, value in options.items():
        if key not in df.columns:
            raise UsageError(f"ampbench:table {run.name}: no column {key!r}")
        df = df[df[key].astype(str) == value]
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UsageError(f"ampbench:table {run.name}: no column {missing[0]!r}")
    return df[columns].to_markdown(index=False, floatfmt=".3g")


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


def _variants(run: Path, options: dict[str, str]) -> str:
    """The fastest variant per mode and batch size; `with=RUN2+RUN3` adds the rows of other runs
    (variants measured in a folder of their own)."""
    df = _rows_with("variants", run, options)
    return report.best_variant_table(df, options.get("optimizer", "fused"))


def _recipes(run: Path, options: dict[str, str]) -> str:
    """The fastest mode and variant per batch size of a timing run."""
    unknown = set(options) - {"optimizer"}
    if unknown:
        raise UsageError(f"ampbench:recipes takes optimizer=, not {sorted(unknown)[0]}=")
    return report.fastest_recipe_table(results.load(run), options.get("optimizer", "fused"))


def _scaling(run: Path, options: dict[str, str]) -> str:
    """The scaling efficiency per mode and parallelism of a run of several ranks; `with=RUN2`
    adds the columns of a run on another GPU count."""
    df = _rows_with("scaling", run, options)
    optimizer = options.get("optimizer", "fused")
    try:
        table = report.scaling_table(df, optimizer)
    except ValueError as exc:
        raise UsageError(f"ampbench:scaling {run.name}: {exc}") from exc
    targets = report.scaling_targets(df[(df["status"] == "ok") & (df["optimizer"] == optimizer)])
    return "\n".join([*targets, "", f"Scaling efficiency (%), {optimizer} Adam:", "", table])


def _maxbatch(run: Path, options: dict[str, str]) -> str:
    """The largest-batch table of a `maxbatch` folder."""
    from bench import maxbatch

    if options:
        raise UsageError(f"ampbench:maxbatch takes no option, got {sorted(options)[0]}=")
    limit = results.read_env(run)["maxbatch_config"]["limit"]
    table = maxbatch.summarize_trials(
        pd.DataFrame(results.read_jsonl(run / maxbatch.TRIALS)), limit
    )
    columns = {
        "mode": "mode",
        "largest_batch": "largest batch",
        "samples_per_s": "samples/s there",
        "peak_alloc_gib": "peak GiB there",
        "limited_by": "limited by",
    }
    return table[list(columns)].rename(columns=columns).to_markdown(index=False, floatfmt=".4g")


KINDS = {
    "headline": _headline,
    "answer": _answer,
    "table": _rows_table,
    "variants": _variants,
    "maxbatch": _maxbatch,
    "recipes": _recipes,
    "scaling": _scaling,
}


def generate(block: Block, root: Path = paths.ROOT) -> str:
    """What `block` should hold: marker to marker, the content with a blank line either side."""
    if block.kind not in KINDS:
        raise UsageError(f"{block.label}: unknown kind; choose from {', '.join(KINDS)}")
    run = root / block.run
    if not (run / results.ENV).is_file():
        raise UsageError(f"{block.label}: {block.run} is not a run folder (no {results.ENV})")
    return f"\n{KINDS[block.kind](run, dict(block.options))}\n\n"


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


def update(path: Path, *, check: bool = False) -> list[Block]:
    """Fill the blocks of `path` from their runs (with `check`, only compare); returns the blocks
    that disagreed with their run."""
    text = path.read_text()
    new, changed = regenerate(text, path.parent)
    if changed and not check:
        path.write_text(new)
    return changed
