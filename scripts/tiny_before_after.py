"""Every command of `python -m bench --help` at tiny CPU sizes, at two revisions, compared file by
file: the evidence that a restructuring changed no report.md and no table.

Two checks, each a row per file:
- job: each command run at REV_A and at REV_B with the same command line into a scratch folder;
  report.md and every table it wrote compared with what differs between any two runs masked
  (measured times, memory and throughput, timestamps, commits, folder names, paths);
- render: each folder REV_A's jobs wrote, a sample of REV_A's published results/ folders and
  REV_A's README.md, docs/ and results/ (index, history, readme, publish; `pages` where REV_B
  has it) rendered by REV_A's code and by REV_B's code from the same copy at the same path,
  compared byte for byte. A rendering is code alone, so here any difference is a change.

A status names what differs: `identical`; `measured-only` (job check: only masked fields);
`module-paths-only` (only names of ampbench's own modules, `bench.x.y` or `bench/x/y.py`);
`differs` (the first differing line or the columns that differ); `only-A`/`only-B`;
`failed` (a command's exit status differs between the sides, or its output is missing).

Run from the repository root (about 12 minutes on 2 busy cores; worktrees and scratch files
go under a temporary folder, removed at the end unless --keep):
    python scripts/tiny_before_after.py [--rev-a 11e7863] [--rev-b HEAD] [--out FILE]
It prints (or writes to --out) the summary: the command lines, each side's exit statuses, a
row per compared file and the counts per command. Exit 0 whatever it finds (it is evidence,
not a gate)."""

from __future__ import annotations

import argparse
import csv
import difflib
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# The tiny sizes of bench/jobs/record.py's TINY and the tests (tests/test_numerics_workloads.py,
# test_maxbatch.py); every option here exists at both default revisions, so one command line
# serves both.
TINY_RUN = ("--device", "cpu", "--preset", "tiny", "--modes", "fp32,bf16-amp", "--batch-sizes",
            "4,8", "--optimizers", "foreach,fused", "--variants", "eager", "--steps", "3",
            "--warmup", "1", "--repeats", "1", "--seed", "0")  # fmt: skip
TINY_NUMERICS = ("--device", "cpu", "--preset", "tiny", "--modes", "fp32,fp16-amp,bf16-amp",
                 "--census-batch-sizes", "4", "--histogram-batch", "4", "--conv-batch-sizes",
                 "4", "--seeds", "0", "--steps", "6", "--eval-every", "3", "--long-steps", "0",
                 "--checkpoints", "0,3", "--heldout", "8")  # fmt: skip
TINY_QUALITY = ("--device", "cpu", "--modes", "fp32,bf16-amp", "--max-seeds", "4", "--steps",
                "2", "--eval-every", "2", "--batch-size", "2", "--heldout-limit", "2",
                "--timing-steps", "1", "--warmup", "1")  # fmt: skip
TINY_MAXBATCH = ("--device", "cpu", "--preset", "tiny", "--modes", "fp32", "--start", "4",
                 "--limit", "8")  # fmt: skip
# --timed-seeds given: its default moved (2 at 11e7863, 3 later), and one line must serve both.
TINY_SWEEP = ("--device", "cpu", "--modes", "fp32,bf16-amp", "--seeds", "0,1", "--timed-seeds",
              "2")  # fmt: skip
TINY_SCRIPT = ("examples/own_loop/plain_loop.py", "--preset", "tiny", "--steps", "6",
               "--batch-size", "2", "--eval-every", "3", "--eval-batches", "1", "--every",
               "3")  # fmt: skip
TINY_AB = (*TINY_RUN, "--rounds", "2", "--min-rounds", "2")
CPU_CRITERIA = """\
[[criterion]]
name = "every case ran"
expect = "status == 'ok'"

[[criterion]]
name = "bf16-amp at batch 8 within 100x of fp32"
where = "batch_size == 8 and optimizer == 'fused'"
ratio = { numerator = "mode == 'bf16-amp'", denominator = "mode == 'fp32'", column = "total_ms" }
expect = "ratio <= 100"
"""
README = """\
# tiny

<!-- ampbench:headline results/tiny batch_size=8 -->
<!-- /ampbench:headline -->

<!-- ampbench:table results/tiny columns=mode,optimizer,batch_size,status -->
<!-- /ampbench:table -->

<!-- ampbench:maxbatch results/maxbatch -->
<!-- /ampbench:maxbatch -->

<!-- ampbench:quality results/quality -->
<!-- /ampbench:quality -->
"""

HELP = ("ampbench", "run", "report", "headline", "compare", "ab", "numerics", "quality", "maxbatch",
        "index", "promote", "history", "export", "readme", "publish", "pages", "check", "sweep",
        "record")  # fmt: skip
"""The commands of `python -m bench --help` at either default revision (ampbench: the list)."""

# Threads pinned and hash seed fixed: the CPU's arithmetic is then the same from run to run.
ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
       "CUDA_VISIBLE_DEVICES": "", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip

# A key (a column, or a JSON path) is a measurement or a run's identity when a word of it is one
# of these: what two runs of one commit give differently.
MEASURED = {
    "ms", "s", "us", "ns", "sec", "seconds", "time", "times", "timing", "elapsed", "wall",
    "clock", "gib", "mib", "kib", "bytes", "mem", "memory", "alloc", "allocated", "reserved",
    "peak", "tflops", "gflops", "flops", "throughput", "per", "tokens", "at", "started", "updated",
    "ended", "date", "stamp", "timestamp", "commit", "sha", "git", "host", "hostname", "node",
    "path", "folder", "dir", "cwd", "run", "pid", "argv", "command", "ceilings", "ceiling",
    "bandwidth", "overhead", "pct", "ratio", "speedup", "floor", "p10", "p50", "p90", "median",
    "mean", "std", "sd", "iqr", "cv", "spread", "noise", "mfu", "stops", "stopped", "windows",
    "log", "diff", "hash", "x", "fp32x", "interval", "lo", "hi", "verdict", "speed", "faster",
    "slower", "window", "repeats", "tflop", "samples", "share", "gbps", "noisy", "p", "holm",
    "value", "range",
}  # fmt: skip
STAMP = re.compile(r"\d{8}T\d{6}Z")
ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:?\d{2}|Z)?")
TMP = re.compile(r"/tmp/[\w.+-]+")
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
CELL_FLAG = re.compile(r"(?<=\|)\s*(?:yes|no)\s*(?=\|)")
VERDICT = re.compile(
    r"\b(noisy|tied|fastest|faster|slower|same|unclear|noise|overlap|decided|undecided|IQR)\b"
)
MODULE = re.compile(r"\bbench(?:[./][A-Za-z_]\w*)+(?:\.py)?")
TEXT = (".md", ".txt", ".html", ".css", ".js", ".svg", ".toml", ".log", ".yml", ".csv", ".json")
TABLES = (".csv", ".csv.gz", ".jsonl", ".jsonl.gz", ".json")


@dataclass
class Side:
    """One revision: its worktree, its scratch folder, and each labelled command's exit."""

    name: str
    rev: str
    commit: str
    tree: Path
    scratch: Path
    python: str
    pair: tuple[str, str]
    """REV_A's and REV_B's commits, which `ab` compares at both sides."""
    exits: dict[str, tuple[int, float, str]] = field(default_factory=dict)

    def bench(self, label: str, argv: list[str], out: Path | None = None) -> int:
        """`python -m bench ARGV` in this side's worktree, under nice; stdout into OUT/stdout.txt
        (the command's printed table is an output), stderr into the scratch's logs."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AMPBENCH_")}
        env.pop("PYTHONPATH", None)
        env.update(ENV)
        started = time.time()
        proc = subprocess.run(
            ["nice", "-n", "10", self.python, "-m", "bench", *argv],
            cwd=self.tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        logs = self.scratch / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{label.replace(' ', '_')}.log").write_text(proc.stderr)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "stdout.txt").write_text(proc.stdout)
        last = (proc.stderr.strip().splitlines() or [""])[-1][:160]
        self.exits[label] = (proc.returncode, time.time() - started, last)
        return proc.returncode

    def has(self, command: str) -> bool:
        """Whether `command` exists at this revision (pages and record came after 11e7863)."""
        return command.startswith("-") or (self.tree / "bench" / "cli" / f"{command}.py").is_file()


@dataclass(frozen=True)
class Row:
    check: str
    command: str
    file: str
    status: str
    detail: str = ""


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def only_child(parent: Path) -> Path | None:
    """The one folder a job made under its own results dir (None when it made none)."""
    found = sorted(p for p in parent.iterdir() if p.is_dir()) if parent.is_dir() else []
    return found[-1] if found else None


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def written(before: dict[str, tuple[int, int]], folder: Path) -> set[str]:
    """The files a command wrote in `folder`: new, or with a new size or time."""
    after = snapshot(folder)
    return {name for name, stamp in after.items() if before.get(name) != stamp}


# ---------------------------------------------------------------- the jobs, once per side


def jobs(side: Side) -> None:
    """Every command at tiny sizes, each into scratch/jobs/COMMAND/ (its results dir or copies)."""
    j = side.scratch / "jobs"
    side.bench("run", ["run", *TINY_RUN, "--results-dir", str(j / "run")], j / "run")
    run1 = only_child(j / "run")
    # The second run of the comparison, tagged so that the two names differ after masking.
    side.bench(
        "run-second", ["run", *TINY_RUN, "--tag", "second", "--results-dir", str(j / "run-second")]
    )
    run2 = only_child(j / "run-second")
    for command, options in (
        ("numerics", TINY_NUMERICS),
        ("quality", TINY_QUALITY),
        ("maxbatch", TINY_MAXBATCH),
    ):
        side.bench(command, [command, *options, "--results-dir", str(j / command)], j / command)
    script = [side.python, *TINY_SCRIPT]
    side.bench(
        "sweep",
        ["sweep", *TINY_SWEEP, "--results-dir", str(j / "sweep"), "--", *script],
        j / "sweep",
    )
    # ab of the two revisions under test, by each side's code: its rounds run each revision's
    # own `run` in ab's own worktrees.
    side.bench("ab", ["ab", *side.pair, *TINY_AB, "--results-dir", str(j / "ab")], j / "ab")
    if run1 is None or run2 is None:
        return  # the rest reads the run; its exit status already says why not
    stage_written(side, "report", j / "report", {"RUN": run1}, lambda d: ["report", str(d / "RUN")])
    side.bench("headline", ["headline", str(run1)], j / "headline")
    stage_written(
        side,
        "compare",
        j / "compare",
        {run1.name: run1, run2.name: run2},
        lambda d: ["compare", str(d / run1.name), str(d / run2.name)],
    )
    (j / "check").mkdir(parents=True)
    (j / "check" / "cpu.toml").write_text(CPU_CRITERIA)
    side.bench(
        "check", ["check", str(run1), "--criteria", str(j / "check" / "cpu.toml")], j / "check"
    )
    (j / "export").mkdir(parents=True)
    side.bench("export", ["export", str(run1), "--output", str(j / "export" / "export.json")])
    stage_written(
        side,
        "promote",
        j / "promote",
        {},
        lambda d: ["promote", str(run1), "--allow-cpu", "--results-dir", str(d / "results")],
    )
    published = {
        f"results/{p.name}": p
        for p in (run1, *(only_child(j / c) for c in ("numerics", "quality", "maxbatch")))
        if p is not None
    }
    for command in ("index", "history"):
        stage_written(
            side,
            command,
            j / command,
            published,
            lambda d, c=command: [c, "--results-dir", str(d / "results")],
        )
    stage_written(
        side,
        "publish",
        j / "publish",
        published,
        lambda d: ["publish", "--results-dir", str(d / "results"), "--output", str(d / "site")],
    )
    named = {
        "results/tiny": run1,
        "results/quality": only_child(j / "quality"),
        "results/maxbatch": only_child(j / "maxbatch"),
    }
    stage_written(
        side,
        "readme",
        j / "readme",
        named,
        lambda d: ["readme", "--file", str(d / "README.md")],
        readme=True,
    )
    if side.has("pages"):
        stage_written(
            side,
            "pages",
            j / "pages",
            {**published, **named},
            lambda d: [
                "pages",
                "--file",
                str(d / "README.md"),
                "--results-dir",
                str(d / "results"),
                "--output",
                str(d / "site"),
            ],
            readme=True,
        )
    if side.has("record"):
        side.bench(
            "record",
            [
                "record",
                "--device",
                "cpu",
                "--compare-with",
                "none",
                "--results-dir",
                str(j / "record"),
            ],
            j / "record",
        )


def stage_written(
    side: Side,
    command: str,
    where: Path,
    inputs: dict[str, Path | None],
    argv,
    readme: bool = False,
) -> None:
    """Copy `inputs` into `where`, run the command there and keep only what it wrote: the
    copied inputs are the run's own files, compared under their own command."""
    for name, src in inputs.items():
        if src is not None:
            shutil.copytree(src, where / name)
    where.mkdir(parents=True, exist_ok=True)
    if readme:
        (where / "README.md").write_text(README)
    before = snapshot(where)
    side.bench(command, argv(where), where)
    keep = written(before, where)
    for path in sorted(where.rglob("*"), reverse=True):
        rel = str(path.relative_to(where))
        if path.is_file() and rel not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


# ---------------------------------------------------------------- the cross-render


def render_one(side: Side, label: str, src: dict[str, Path], argv_of, stage: Path) -> Path:
    """Copy `src` to `stage`, run the commands of `argv_of(stage)` with `side`'s code there and
    keep what they wrote (stdout as .out/STEP/stdout.txt) in scratch/render/LABEL."""
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    for name, path in src.items():
        if path.is_dir():
            shutil.copytree(path, stage / name)
        else:
            shutil.copy2(path, stage / name)
    before = snapshot(stage)
    for step, argv in argv_of(stage):
        if side.has(argv[0]):
            side.bench(f"render {label} {step}", argv, stage / ".out" / step)
    dest = side.scratch / "render" / label
    dest.mkdir(parents=True)
    for rel in written(before, stage):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(stage / rel, dest / rel)
    shutil.rmtree(stage)
    return dest


def render_both(a: Side, b: Side, label: str, src: dict[str, Path], argv_of, stage: Path) -> dict:
    """One input rendered by each side's code at one path (so that no path differs)."""
    out = {side.name: render_one(side, label, src, argv_of, stage) for side in (a, b)}
    fill_from_input(list(out.values()), src)
    return out


def fill_from_input(outputs: list[Path], src: dict[str, Path]) -> None:
    """A file that one side rewrote and the other left as it was is compared with the input."""
    every = {str(f.relative_to(o)) for o in outputs for f in o.rglob("*") if f.is_file()}
    for rel in every:
        name, _, rest = rel.partition("/")
        origin = src.get(name)
        if origin is None or not (origin / rest if rest else origin).is_file():
            continue
        for out in outputs:
            if not (out / rel).exists():
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin / rest if rest else origin, out / rel)


def published_sample(results: Path, readme: Path, every: bool) -> list[Path]:
    """REV_A's published folders: every one, or the newest of each kind (the name's suffix after
    the commit) and the README's run of record."""
    folders = sorted(p.parent for p in results.glob("*/env.json")) + sorted(
        p.parent for p in results.glob("*/*/env.json")
    )
    if every:
        return folders
    kinds: dict[str, Path] = {}
    for folder in folders:
        m = re.match(
            r"\d{8}T\d{6}Z_[^_]+_(?:[0-9a-f]{7}|nogit)(?:_vs_[0-9a-f]{7})?_?([a-z]*)", folder.name
        )
        kinds[m.group(1) if m else folder.name] = folder  # sorted: the newest stays
    record = re.search(r"<!-- ampbench:headline (results/\S+)", readme.read_text())
    chosen = set(kinds.values()) | ({readme.parent / record.group(1)} if record else set())
    return sorted(chosen)


def renders(a: Side, b: Side, every: bool) -> list[Row]:
    """Everything REV_A's code renders, rendered by REV_B's code from the same copy."""
    rows: list[Row] = []
    stage = a.scratch.parent / "stage"
    j = a.scratch / "jobs"
    made = [
        only_child(j / c)
        for c in ("run", "run-second", "numerics", "quality", "maxbatch", "sweep", "ab")
    ]
    published = published_sample(a.tree / "results", a.tree / "README.md", every)
    for folder in [p for p in made if p is not None] + published:
        label = f"report {folder.name}"
        out = render_both(
            a,
            b,
            label,
            {folder.name: folder},
            lambda d, f=folder: [("report", ["report", str(d / f.name)])],
            stage,
        )
        rows += compare_trees("render", "report", out["A"], out["B"], measured=False, a=a, b=b)
    # The printed commands on the run of record and on two published runs of one grid.
    record = re.search(r"<!-- ampbench:headline (results/\S+)", (a.tree / "README.md").read_text())
    if record:
        run = a.tree / record.group(1)
        pair = sorted((a.tree / "results" / "aa-noise-h200").glob("2*"))[:2]
        src = {"run": run, "criteria.toml": a.tree / "examples" / "criteria" / "h200.toml"}
        src |= {f"p{i}": p for i, p in enumerate(pair)}
        steps = lambda d: [  # noqa: E731
            ("headline", ["headline", str(d / "run")]),
            ("export", ["export", str(d / "run")]),
            ("check", ["check", str(d / "run"), "--criteria", str(d / "criteria.toml")]),
            ("compare", ["compare", str(d / "p0"), str(d / "p1"), "--no-write"]),
            (
                "compare-pair",
                [
                    "compare",
                    "--pair",
                    "optimizer=foreach:fused",
                    str(d / "run"),
                    str(d / "run"),
                    "--no-write",
                ],
            ),
        ]
        out = render_both(a, b, "printed", src, steps, stage)
        for command in ("headline", "export", "check", "compare", "compare-pair"):
            rows += compare_trees(
                "render",
                command,
                out["A"] / ".out" / command,
                out["B"] / ".out" / command,
                measured=False,
                a=a,
                b=b,
            )
    # Each command's --help: an option's text may name a module that moved.
    out = render_both(
        a,
        b,
        "help",
        {},
        lambda d: [(c, [c, "--help"] if c != "ampbench" else ["--help"]) for c in HELP],
        stage,
    )
    for command in HELP:
        found = compare_trees("render", "help", out["A"] / ".out" / command,
                              out["B"] / ".out" / command, measured=False, a=a, b=b)  # fmt: skip
        rows += [replace(r, file=f"{command} --help") for r in found]
    # The published pages: README.md, docs/ and results/ of REV_A, as `pages` makes them.
    project = {
        "README.md": a.tree / "README.md",
        "docs": a.tree / "docs",
        "results": a.tree / "results",
    }
    four = lambda d: [  # noqa: E731
        ("history", ["history", "--results-dir", str(d / "results")]),
        ("readme", ["readme", "--file", str(d / "README.md")]),
        ("index", ["index", "--results-dir", str(d / "results")]),
        ("publish", ["publish", "--results-dir", str(d / "results"), "--output", str(d / "site")]),
    ]
    out = render_both(a, b, "pages", project, four, stage)
    for command, under in (
        ("history", "results/history"),
        ("readme", "README.md|docs"),
        ("index", "results/README.md"),
        ("publish", "site"),
    ):
        rows += compare_trees(
            "render", command, out["A"], out["B"], measured=False, a=a, b=b, only=under
        )
    if b.has("pages"):
        pages_argv = lambda d: [  # noqa: E731
            ("pages", ["pages", "--file", str(d / "README.md"), "--results-dir",
                       str(d / "results"), "--output", str(d / "site")]),
        ]  # fmt: skip
        made = "results/history|README.md|docs|results/README.md|site"
        one = {side.name: render_one(side, "pages-one", project, pages_argv, stage)
               for side in (a, b) if side.has("pages")}  # fmt: skip
        fill_from_input([out["A"], out["B"], *one.values()], project)
        # `pages` at both, or (where REV_A lacks it) against REV_A's four commands, run in its
        # order; and against REV_B's own four: what `pages` adds to them at one revision.
        first, label = (one["A"], "pages") if "A" in one else (out["A"], "pages (vs A's four)")
        rows += compare_trees("render", label, first, one["B"], measured=False, a=a, b=b,
                              only=made)  # fmt: skip
        rows += compare_trees("render", "pages (vs B's four)", out["B"], one["B"],
                              measured=False, a=b, b=b, only=made)  # fmt: skip
    return rows


# ---------------------------------------------------------------- comparing two folders


def words(key: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", key.lower()) if w}


def is_measured(key: str) -> bool:
    return bool(words(key) & MEASURED)


def read_bytes(path: Path) -> bytes:
    # gzip's header holds a time: the content is what counts.
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def records(path: Path) -> list[dict[str, str]]:
    """A table file as flat records of strings: csv rows, JSON-lines lines, one JSON document."""
    text = read_bytes(path).decode()
    name = path.name.removesuffix(".gz")
    if name.endswith(".csv"):
        return list(csv.DictReader(io.StringIO(text)))
    if name.endswith(".json"):
        return [flatten(json.loads(text))]
    return [flatten(json.loads(line)) for line in text.splitlines() if line.strip()]


def flatten(doc: object, prefix: str = "") -> dict[str, str]:
    if isinstance(doc, dict):
        out: dict[str, str] = {}
        for k, v in doc.items():
            out |= flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(doc, list) and any(isinstance(v, dict | list) for v in doc):
        out = {}
        for i, v in enumerate(doc):
            out |= flatten(v, f"{prefix}[{i}]")
        return out
    return {prefix: json.dumps(doc)}


class Masker:
    """What differs between any two runs, however the code behaves: paths, stamps, commits."""

    def __init__(self, side: Side, other: Side) -> None:
        hashes = {side.commit, other.commit}
        self.subs = [(str(side.scratch), "<SCRATCH>"), (str(side.tree), "<TREE>")]
        self.subs += [(h[:n], "<COMMIT>") for h in hashes for n in (40, 12, 9, 8, 7)]

    def ids(self, text: str) -> str:
        for old, new in self.subs:
            text = text.replace(old, new)
        return TMP.sub("<TMP>", ISO.sub("<TIME>", STAMP.sub("<STAMP>", text)))

    def numbers(self, text: str) -> str:
        # yes/no in a table cell is a flag on measured figures (noisy).
        masked = CELL_FLAG.sub(" # ", NUMBER.sub("#", self.ids(text)))
        return re.sub(r"-{3,}", "---", re.sub(r"\s+", " ", masked)).strip()


def shown(x: str, y: str) -> str:
    """Two differing lines, from a little before where they part."""
    at = next(
        (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y))
    )
    cut = max(0, at - 30)
    return f"A {x[cut : cut + 100]!r} / B {y[cut : cut + 100]!r}"


def hunks(la: list[str], lb: list[str], keys_a: list[str], keys_b: list[str]):
    """The (A lines, B lines) that differ, aligned on the keys (the lines, masked or not)."""
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            yield la[i1:i2], lb[j1:j2], i1


def describe(found: list[tuple[list[str], list[str], int]]) -> str:
    """How many lines differ, and the first pair (or the first line of one side alone)."""
    n = sum(max(len(x), len(y)) for x, y, _ in found)
    x, y, at = found[0]
    # A blank line that moved says nothing: show the first line with text.
    x, y = [v for v in x if v.strip()] or x, [v for v in y if v.strip()] or y
    if x and y:
        return f"{n} lines; line {at + 1}: {shown(x[0], y[0])}"
    return f"{n} lines; from line {at + 1} only {'A' if x else 'B'}: {(x or y)[0][:100]!r}"


def compare_text(pa: Path, pb: Path, measured: bool, ma: Masker, mb: Masker) -> tuple[str, str]:
    ta, tb = read_bytes(pa).decode(errors="replace"), read_bytes(pb).decode(errors="replace")
    if ta == tb:
        return "identical", ""
    la, lb = ta.splitlines(), tb.splitlines()
    moved_a, moved_b = (
        [MODULE.sub("bench.<M>", x) for x in la],
        [MODULE.sub("bench.<M>", x) for x in lb],
    )
    if moved_a == moved_b:
        names = {
            m for x, y in zip(la, lb, strict=False) if x != y for m in MODULE.findall(x + " " + y)
        }
        return "module-paths-only", ", ".join(sorted(names)[:6])
    if not measured:
        return "differs", describe(list(hunks(la, lb, la, lb)))
    # Numbers, paths, stamps and commits masked, and a table's padding, which follows its numbers.
    na = [MODULE.sub("bench.<M>", ma.numbers(x)) for x in la]
    nb = [MODULE.sub("bench.<M>", mb.numbers(x)) for x in lb]
    if na == nb:
        return "measured-only", "numbers, paths, stamps, commits"
    # A sentence that judges measured figures (noisy, tied, faster) changes with them.
    ia, ib = [ma.ids(x) for x in la], [mb.ids(x) for x in lb]
    found = list(hunks(ia, ib, na, nb))
    left = [h for h in found if not all(VERDICT.search(line) for line in h[0] + h[1])]
    if not left:
        return "measured-only", f"numbers, and {len(found)} verdict sentences on measured figures"
    return "differs", describe(left)


def compare_table(pa: Path, pb: Path, measured: bool, ma: Masker, mb: Masker) -> tuple[str, str]:
    ra, rb = records(pa), records(pb)
    if read_bytes(pa) == read_bytes(pb):
        return "identical", ""
    keys_a = {k for r in ra for k in r}
    keys_b = {k for r in rb for k in r}
    notes, real = [], False
    if len(ra) != len(rb):
        notes.append(f"rows {len(ra)} vs {len(rb)}")
        real = True
    for label, keys in (("only A", keys_a - keys_b), ("only B", keys_b - keys_a)):
        if keys:
            notes.append(f"keys {label}: {', '.join(sorted(keys)[:8])}")
            real = True
    differing, masked, nan_null = Counter(), Counter(), Counter()
    for x, y in zip(ra, rb, strict=False):
        for k in keys_a & keys_b:
            va, vb = x.get(k), y.get(k)
            if va == vb:
                continue
            if measured and (is_measured(k) or ma.ids(str(va)) == mb.ids(str(vb))):
                masked[k] += 1
            elif MODULE.sub("M", str(va)) == MODULE.sub("M", str(vb)):
                masked[f"{k} (module path)"] += 1
            else:
                differing[k] += 1
                nan_null[k] += {va, vb} <= {"NaN", "null", "NaN,", ""}
    if differing:
        real = True
        k = sorted(differing)[0]
        row = next(i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x.get(k) != y.get(k))
        example = f"{k} row {row}: A {ra[row].get(k)!s:.60} | B {rb[row].get(k)!s:.60}"
        cols = ", ".join(
            f"{c} ({n}{', NaN as null' if nan_null[c] == n else ''})"
            for c, n in sorted(differing.items())[:10]
        )
        notes.append(f"columns {cols}; e.g. {example}")
    if real:
        return "differs", "; ".join(notes)
    if masked and all(k.endswith("(module path)") for k in masked):
        return "module-paths-only", ", ".join(sorted(masked)[:6])
    if not masked:  # the same records in another byte form (key order, float format)
        la, lb = read_bytes(pa).decode().splitlines(), read_bytes(pb).decode().splitlines()
        return "differs", "same values, other bytes: " + describe(list(hunks(la, lb, la, lb)))
    return "measured-only", "masked: " + ", ".join(sorted(masked)[:10]) + (
        f" (+{len(masked) - 10})" if len(masked) > 10 else ""
    )


def same_array(x: np.ndarray, y: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(x, y, equal_nan=True))
    except TypeError:  # NaN means nothing to strings and objects
        return bool(np.array_equal(x, y))


def compare_npz(pa: Path, pb: Path, measured: bool) -> tuple[str, str]:
    with np.load(pa) as za, np.load(pb) as zb:
        if set(za.files) != set(zb.files):
            gone, new = set(za.files) - set(zb.files), set(zb.files) - set(za.files)
            return "differs", f"arrays only A {sorted(gone)}, only B {sorted(new)}"
        bad = [k for k in za.files if not same_array(za[k], zb[k])]
    if not bad:
        return "identical", ""
    if measured and all(is_measured(k) for k in bad):
        return "measured-only", "masked: " + ", ".join(bad[:6])
    return "differs", "arrays " + ", ".join(bad[:6])


def compare_file(pa: Path, pb: Path, measured: bool, ma: Masker, mb: Masker) -> tuple[str, str]:
    name = pa.name
    if name.endswith(".npz"):
        return compare_npz(pa, pb, measured)
    if name.endswith(TABLES):
        return compare_table(pa, pb, measured, ma, mb)
    if name.endswith(TEXT) or name in ("stdout.txt",):
        return compare_text(pa, pb, measured, ma, mb)
    if read_bytes(pa) == read_bytes(pb):
        return "identical", ""
    # A figure of measured data differs as its data does; a rendering's figure must not.
    return ("measured-only", "binary (a figure)") if measured else ("differs", "binary")


def compare_trees(
    check: str,
    command: str,
    dir_a: Path,
    dir_b: Path,
    *,
    measured: bool,
    a: Side,
    b: Side,
    only: str = "",
) -> list[Row]:
    """A row per file under either folder, matched by path with stamps and commits masked."""
    ma, mb = Masker(a, b), Masker(b, a)

    def files(folder: Path, masker: Masker) -> dict[str, Path]:
        if not folder.is_dir():
            return {}
        found = {}
        for p in folder.rglob("*"):
            rel = str(p.relative_to(folder))
            if p.is_file() and p.name != ".lock" and (not only or re.match(f"({only})", rel)):
                # A rendering works at one path; two runs' folders differ by stamp and commit.
                found[masker.ids(rel) if measured else rel] = p
        return found

    fa, fb = files(dir_a, ma), files(dir_b, mb)
    if not fa and not fb:  # e.g. `readme` where every block already matched its run
        return [Row(check, command, "(no file written at either)", "identical")]
    if bool(fa) != bool(fb):  # a command one revision lacks: one row, not one per file
        status, n = ("only-A", len(fa)) if fa else ("only-B", len(fb))
        return [Row(check, command, f"({n} files)", status, "nothing at the other revision")]
    rows = []
    for rel in sorted(fa.keys() | fb.keys()):
        if rel not in fb:
            rows.append(Row(check, command, rel, "only-A"))
        elif rel not in fa:
            rows.append(Row(check, command, rel, "only-B"))
        else:
            try:
                status, detail = compare_file(fa[rel], fb[rel], measured, ma, mb)
            except (ValueError, UnicodeDecodeError, OSError) as exc:
                status, detail = "differs", f"unreadable: {exc}"
            rows.append(Row(check, command, rel, status, detail))
    return rows


# ---------------------------------------------------------------- the summary

STATUSES = (
    "identical",
    "measured-only",
    "module-paths-only",
    "differs",
    "only-A",
    "only-B",
    "failed",
)


def summary(a: Side, b: Side, rows: list[Row], seconds: float, reused: bool) -> str:
    lines = [
        "# Tiny CPU runs of every command at two revisions, compared file by file",
        "",
        f"A: {a.rev} = {a.commit}",
        f"B: {b.rev} = {b.commit}",
        f"wall time of this call: {seconds:.0f} s"
        + (" (the jobs ran in an earlier call: their seconds are below)" if reused else ""),
        f"environment: {' '.join(f'{k}={v}' for k, v in ENV.items())}",
        "",
        "Command lines (the same at both revisions; FOLDER names what an earlier command wrote):",
        f"- run {' '.join(TINY_RUN)} (twice: the second with --tag second, for compare)",
        f"- numerics {' '.join(TINY_NUMERICS)}",
        f"- quality {' '.join(TINY_QUALITY)}",
        f"- maxbatch {' '.join(TINY_MAXBATCH)}",
        f"- sweep {' '.join(TINY_SWEEP)} -- python {' '.join(TINY_SCRIPT)}",
        f"- ab {a.commit[:7]} {b.commit[:7]} {' '.join(TINY_AB)}",
        "- report, headline, compare, check (a CPU criteria file), export, promote --allow-cpu,",
        "  index, history, publish, readme (a README naming the tiny folders), pages and",
        "  record --device cpu --compare-with none where the revision has them",
        "",
        "What the job check masks (what two runs of one commit give differently): in text, every",
        "number, path, stamp, commit, a table cell's yes/no, a line judging measured figures",
        f"({VERDICT.pattern}); in a table, a key with one of the words",
        f"{', '.join(sorted(MEASURED))}.",
        "The render check masks nothing.",
        "",
        "Exit statuses (A | B):",
        "",
        "| command | A exit | A s | B exit | B s | last stderr line where an exit differs |",
        "|---|---|---|---|---|---|",
    ]
    for label in sorted(a.exits.keys() | b.exits.keys()):
        ea, eb = a.exits.get(label), b.exits.get(label)
        last = ""
        if ea is None or eb is None or ea[0] != eb[0]:
            last = " / ".join(f"{s}: {e[2]}" for s, e in (("A", ea), ("B", eb)) if e and e[0])
        cell = lambda e: ("–", "–") if e is None else (str(e[0]), f"{e[1]:.0f}")  # noqa: E731
        lines.append(f"| {label} | {' | '.join(cell(ea))} | {' | '.join(cell(eb))} | {last} |")
    lines += [
        "",
        "Files:",
        "",
        "| check | command | file | status | detail |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.check} | {r.command} | {r.file} | {r.status} | {r.detail.replace('|', '/')} |"
        for r in rows
    ]
    lines += [
        "",
        "Counts:",
        "",
        f"| check | command | {' | '.join(STATUSES)} |",
        "|---|---|" + "---|" * len(STATUSES),
    ]
    counts = Counter((r.check, r.command, r.status) for r in rows)
    for check, command in sorted({(r.check, r.command) for r in rows}):
        cells = " | ".join(str(counts[(check, command, s)]) for s in STATUSES)
        lines.append(f"| {check} | {command} | {cells} |")
    return "\n".join(lines) + "\n"


def exit_rows(a: Side, b: Side) -> list[Row]:
    """A row for each command whose exit differs between the sides, or that one side lacks."""
    rows = []
    for label in sorted(a.exits.keys() | b.exits.keys()):
        check, command = (
            ("render", label.split()[-1])
            if label.startswith("render")
            else ("job", label.split()[0])
        )
        ea, eb = a.exits.get(label), b.exits.get(label)
        if ea is None or eb is None:
            rows.append(
                Row(
                    check,
                    command,
                    f"(exit of {label})",
                    "only-A" if eb is None else "only-B",
                    "not a command at the other revision",
                )
            )
        elif ea[0] != eb[0]:
            rows.append(
                Row(check, command, f"(exit of {label})", "failed", f"A {ea[0]}, B {eb[0]}")
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev-a", default="11e7863", help="the revision before (default 11e7863)")
    parser.add_argument("--rev-b", default="HEAD", help="the revision after (default HEAD)")
    parser.add_argument("--out", type=Path, help="write the summary here (default: print it)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of both sides")
    parser.add_argument(
        "--all-published",
        action="store_true",
        help="re-render every published folder, not the newest of each kind",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument(
        "--scratch",
        type=Path,
        help="work in this folder and keep it; a side whose jobs finished there is not run again "
        "(the comparisons and renders are)",
    )
    args = parser.parse_args(argv)
    started = time.time()
    base = args.scratch or Path(tempfile.mkdtemp(prefix="tiny_before_after_"))
    base.mkdir(parents=True, exist_ok=True)
    commits = [git("rev-parse", f"{r}^{{commit}}") for r in (args.rev_a, args.rev_b)]
    sides = []
    try:
        for name, rev, commit in zip("AB", (args.rev_a, args.rev_b), commits, strict=True):
            tree = base / f"tree_{name}"
            git("worktree", "add", "--detach", str(tree), commit)
            pair = (commits[0][:12], commits[1][:12])
            sides.append(Side(name, rev, commit, tree, base / f"scratch_{name}", args.python, pair))
        a, b = sides
        reused = False
        for side in sides:
            done = side.scratch / "jobs.json"  # the jobs' exits, once every job ran
            if done.is_file() and json.loads(done.read_text())["commit"] == side.commit:
                side.exits = {k: tuple(v) for k, v in json.loads(done.read_text())["exits"].items()}
                reused = True
            else:
                print(
                    f"tiny_before_after: jobs at {side.name} ({side.commit[:7]})", file=sys.stderr
                )
                shutil.rmtree(side.scratch, ignore_errors=True)
                jobs(side)
                done.write_text(json.dumps({"commit": side.commit, "exits": side.exits}))
            shutil.rmtree(side.scratch / "render", ignore_errors=True)
        rows: list[Row] = []
        for command in sorted({p.name for s in sides for p in (s.scratch / "jobs").iterdir()}):
            rows += compare_trees(
                "job",
                command,
                a.scratch / "jobs" / command,
                b.scratch / "jobs" / command,
                measured=True,
                a=a,
                b=b,
            )
        print("tiny_before_after: rendering A's folders with both", file=sys.stderr)
        rows += renders(a, b, args.all_published)
        rows += exit_rows(a, b)  # the jobs' and the renders'
        text = summary(a, b, rows, time.time() - started, reused)
    finally:
        for side in sides:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(side.tree)],
                cwd=ROOT,
                check=False,
                capture_output=True,
            )
        if args.keep or args.scratch:
            print(f"tiny_before_after: scratch kept in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    if args.out:
        args.out.write_text(text)
        print(f"tiny_before_after: wrote {args.out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
