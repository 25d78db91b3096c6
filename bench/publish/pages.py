"""Every published page made again from the folders, in one pass (`ampbench pages`): the history
pages, README.md's and docs/*.md's generated blocks (docs/variants.md and docs/zoo.md among
them), the index with the folders that left results/, and the site. `--record RUN` first moves
every block that quotes the run of record onto RUN, the newest complete record."""

from __future__ import annotations

import re
from pathlib import Path

from bench.faults import UsageError
from bench.publish import history, index, readme, retired
from bench.publish.site import publish
from bench.store import results, schema
from bench.verdicts.history_points import gpu_models

OPENING_LINE = re.compile(r"^<!-- ampbench:[\w-]+ .*-->$", re.M)


def record_of(readme_path: Path) -> str:
    """The folder name of the run of record: what the README's headline block names."""
    found = index.HEADLINE_MARKER.search(readme_path.read_text())
    if found is None:
        raise UsageError(f"--record: {readme_path} has no ampbench:headline block")
    return Path(found[1]).name


def repoint(readme_path: Path, run: Path) -> list[Path]:
    """Every opening marker of the README and its docs pages that names the run of record names
    `run` instead (a folder of the same results/); the pages changed. Only marker lines change:
    the blocks are filled afterwards, from their folders."""
    env = results.read_env(run) if (run / results.ENV).is_file() else None
    if env is None or schema.kind_of(env, run) != "timing":
        raise UsageError(f"--record {run}: not a timing run folder")
    if env.get("device") == "cpu":
        raise UsageError(f"--record {run}: a CPU run is a smoke test, not a record")
    if not (run / results.REPORT).is_file():
        raise UsageError(f"--record {run}: no report.md; ./run_bench.sh report {run} writes it")
    old = record_of(readme_path)
    if old == run.name:
        return []
    changed = []
    for page in readme.pages(readme_path):
        text = page.read_text()
        new = OPENING_LINE.sub(lambda m: m[0].replace(old, run.name), text)
        if new != text:
            page.write_text(new)
            changed.append(page)
    return changed


def make(results_dir: Path, readme_path: Path, site: Path | None) -> list[str]:
    """Write every page from the folders; one line per page or block written. The history
    first (the index links it), then the blocks (the headline names the run of record), the
    index, and the site from all of them (`site` None: no site)."""
    said = []
    if [g for g in gpu_models(results_dir) if g != "cpu"]:
        said += [str(p) for p in history.write(results_dir)]
    said += [f"{b.label}: regenerated" for b in readme.update(readme_path)]
    retired.refresh(results_dir)
    said.append(str(index.write(results_dir)))
    if site is not None:
        built = publish(results_dir, site)
        said.append(f"{built.front} ({built.pages} pages)")
    return said
