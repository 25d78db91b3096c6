"""The run folder a probe writes: a timing folder (one row, its raw step times) plus
`metrics.jsonl`, `scale.jsonl` and `census.jsonl`; each file is rewritten whole through a
temporary file, so a kill leaves the last complete one."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.store import folders, jsonlines, paths, results, schema
from bench.store.run_env import RunEnv

METRICS, SCALE, CENSUS = "metrics.jsonl", "scale.jsonl", "census.jsonl"
START_STEP = "start_step"
"""env.json's key for the framework's global step when training began, which a callback records
(`hf.py`, `lightning.py`): above 0, the run resumed from a checkpoint, and its first logged
value is no value before training (`bench.verdicts.training.target`)."""


def create(out: str | Path | None, gpu: str, commit: str | None) -> Path:
    """The folder to write: the driver's (`AMPBENCH_OUT`), else `out`, else a new one under the
    project's runs/. One that already holds files is refused: a probe never writes over an
    earlier run. The driver's wins so that a script that names its own folder runs under it
    unchanged."""
    given = os.environ.get("AMPBENCH_OUT") or out
    if given is None:
        now = folders.utc_now()
        path = paths.default_results() / folders.run_dir_name(now, gpu, commit, "_own")
    else:
        path = Path(given)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ValueError(f"out={str(path)!r} already holds files; give a new folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


def start(path: Path, machine: dict, config: dict) -> RunEnv:
    """env.json of a new probe folder: the machine, the command, the probe's settings."""
    info = RunEnv(schema.stamp(machine, "timing"))
    info.update(
        started=folders.iso(),
        command=" ".join(paths.shown_argv(sys.argv)),
        config=config,
        run_name=path.name,
        own_loop=True,
    )
    results.write_env(path, info)
    return info


def _rewrite(path: Path, objects: list[dict]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w") as f:
        for obj in objects:
            f.write(jsonlines.dumps(obj) + "\n")
    tmp.replace(path)


def write(
    path: Path,
    row: dict,
    samples: dict[str, list[float]],
    *,
    metrics: list[dict],
    scale: list[dict],
    census: list[dict],
) -> None:
    """Every file of the folder as it stands (the row, the samples, the probe's own files)."""
    _rewrite(path / results.ROWS, [row])
    kept = {phase: values for phase, values in samples.items() if values}
    _rewrite(path / results.SAMPLES, [{"case_id": row["case_id"], "samples_ms": kept}])
    _rewrite(path / METRICS, metrics)
    _rewrite(path / SCALE, scale)
    _rewrite(path / CENSUS, census)


def save_env(path: Path, info: dict) -> None:
    results.write_env(path, info)


def finish(path: Path, info: dict) -> None:
    info["ended"] = folders.iso()
    results.write_env(path, info)
