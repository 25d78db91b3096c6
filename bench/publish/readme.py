"""Blocks of README.md and docs/*.md generated from run folders: `python -m bench readme [--check]`
finds each `<!-- ampbench:KIND RUN [KEY=VALUE ...] -->` block, rewrites or checks it from its run's
files (`bench.publish.readme_blocks`); docs/comparing.md lists the kinds and their options."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from bench.faults import UsageError
from bench.publish import zoo
from bench.publish.readme_blocks import KINDS, link_to_report, recorded
from bench.store import paths, results
from bench.text.tables import joined

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
    """The block's file relative to the README that brought it; empty for the README's own."""

    @property
    def label(self) -> str:
        where = f"{self.page} " if self.page else ""
        return f"{where}line {self.line}: ampbench:{self.kind} {self.run}"


def blocks(text: str) -> list[Block]:
    """Every generated block of `text`, in order; an unclosed marker is named by its line."""
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


def _model_of(run: Path) -> str:
    """A run's model and preset, as a zoo row names them: `hf:llama` (small)."""
    env = results.read_env(run)
    if env.get("kind") == "quality":
        cfg = env["quality_config"]
        return f"{zoo.label(cfg['model'], cfg['preset'])} on {cfg['data']}"
    first = results.load(run).iloc[0]
    return zoo.label(str(first["model"]), str(first.get("preset", "") or ""))


OLD_KINDS = {"recipes": "fastest"}
"""A kind's old name -> its kind: a page's marker written under the old name is still filled."""
SOURCE_TEXT: dict[str, Callable[[Path], str]] = {"zoo": _model_of}
"""Kinds whose From line names each run by its model and preset, not its folder."""


def _source(run: Path, link: str, options: dict[str, str], kind: str) -> str:
    """The line that opens a block, From [RUN](its report): with the runs `with=` adds, so the
    block's text links the folders its marker names and no prose has to."""
    here = PurePosixPath(link).parent
    text = SOURCE_TEXT.get(kind, lambda folder: None)

    def named(option: str) -> list[str]:
        return [n for n in options.get(option, "").split("+") if n]

    def linked(option: str) -> list[str]:
        """The reports of the folders beside `run` that `option` names (`a+b`)."""
        return [
            link_to_report(run.parent / n, str(here / n), text(run.parent / n))
            for n in named(option)
        ]

    listed = joined([link_to_report(run, link, text(run)), *linked("with")])
    studies = linked("quality")
    if studies:
        study = "study" if len(studies) == 1 else "studies"
        listed += f"; the time-to-quality {study} {joined(studies)}"
    shown = [run, *(run.parent / n for n in named("with") + named("quality"))]
    return f"From {listed} ({recorded(shown)}):"


def _figures(run: Path, link: str, names: str) -> str:
    """Markdown images of `names` (`a.png+b.png`), figures in the folder `run` (`link`)."""
    shown = []
    for name in names.split("+"):
        if not (run / name).is_file():
            raise UsageError(f"figure={name}: no such file in {run.name}")
        shown.append(f"![{PurePosixPath(name).stem}]({link}/{name})")
    return "\n\n".join(shown)


def generate(block: Block, root: Path = paths.ROOT) -> str:
    """What `block` should hold: marker to marker, the content with a blank line either side."""
    kind = OLD_KINDS.get(block.kind, block.kind)
    if kind not in KINDS:
        raise UsageError(f"{block.label}: unknown kind; choose from {', '.join(KINDS)}")
    run = root / block.run
    if not (run / results.ENV).is_file():
        raise UsageError(f"{block.label}: {block.run} is not a run folder (no {results.ENV})")
    options = dict(block.options)
    figures = options.pop("figure", None)
    content = KINDS[kind](run, dict(options), block.run)
    if kind != "summary":  # the summary names its folders in its own first line
        content = f"{_source(run, block.run, options, kind)}\n\n{content}"
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
    """Fill the blocks of `path` (and of a README.md's docs/*.md pages) from their runs, or with
    `check` only compare; returns the blocks that disagreed. Bad input changes nothing."""
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
