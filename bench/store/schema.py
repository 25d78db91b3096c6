"""What a results folder is (`SCHEMA_VERSION`, `KINDS`), the typed timing row (`Row`), and how
folders written by older code are read today (`migrate_env`, `migrate_row`, `migrate_config`):
every reading of an older layout lives here, and the files are never rewritten."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from bench.cases.sizes import UNNAMED, Sizes
from bench.ground import cards

SCHEMA_VERSION = 2
"""1: every folder written before env.json recorded a version (the key is absent). 2: env.json
has `schema` and `kind`; `overhead` is a list of checks."""

KINDS = {
    "numerics": ("numerics_config", "a numerics study"),
    "maxbatch": ("maxbatch_config", "a largest-batch search"),
    "timing": ("config", "a timing run"),
    "ab": ("ab_config", "a comparison of two revisions (`ampbench ab`)"),
    "quality": ("quality_config", "a time-to-quality study"),
}
"""A folder's kind -> (the env.json key of its job's settings, what it is in words). In this
order a folder of version 1 is told by its keys: the short study a timing run made inside its
folder (`run --numerics`) copied the run's env.json, `config` included, before it added its own
`numerics_config`."""

AUDIT_JSON = "audit.json"
"""The file that marks a numerics study older than `numerics_config`."""


def settings_key(kind: str) -> str:
    """The env.json key that holds the settings of a job of `kind`."""
    return KINDS[kind][0]


def describe(kind: str) -> str:
    return KINDS[kind][1]


def kind_of(env: dict, folder: Path | None = None) -> str | None:
    """The kind of a folder from its env.json (and, for the oldest numerics studies, its files);
    None when nothing says."""
    if env.get("kind") in KINDS:
        return str(env["kind"])
    for kind, (key, _) in KINDS.items():
        if key in env:
            return kind
    if folder is not None and (folder / AUDIT_JSON).is_file():
        return "numerics"
    return None


def stamp(env: dict, kind: str) -> dict:
    """`env` marked as a folder of this version and `kind` (a new folder's env.json)."""
    if kind not in KINDS:
        raise ValueError(f"unknown folder kind {kind!r}; choose from {', '.join(KINDS)}")
    return {**env, "schema": SCHEMA_VERSION, "kind": kind}


def migrate_env(env: dict, folder: Path | None = None) -> dict:
    """An env.json of any version in today's shape (a new dict; the file is not rewritten).
    Version 1 lacks `schema` and `kind`, and its `overhead` was one check (a dict); a timing
    run's `config` and a numerics study's of older code hold their sizes as `OLD_SIZES`
    (`migrate_config`)."""
    out = dict(env)
    out.setdefault("schema", 1)
    kind = kind_of(out, folder)
    if kind is not None:
        out.setdefault("kind", kind)
    if isinstance(out.get("overhead"), dict):
        out["overhead"] = [out["overhead"]]
    for key in (settings_key("timing"), settings_key("numerics")):
        if isinstance(out.get(key), dict):
            out[key] = migrate_config(out[key])
    return out


OLD_SIZES = ("input_size", "hidden_size", "num_classes")
"""The columns (and a timing run's config keys) of older code that held a case's three sizes,
in order, whatever its workload."""


def sizes_of(model: str) -> tuple[str, ...]:
    """The names of a built-in workload's sizes (its card's), `UNNAMED` for any other."""
    card = cards.card(model)
    return card.sizes if card is not None else UNNAMED


def old_sizes(model: str, values: tuple[int, ...]) -> Sizes:
    """Three sizes of older code, named as the workload's card names them (`UNNAMED` where no
    card does: only its workload, with torch, knows)."""
    return Sizes(values=tuple(values), names=sizes_of(model))


def migrate_config(cfg: dict) -> dict:
    """A job's config (or a row) with its sizes as today's `sizes` (name -> value), in place of
    older code's `OLD_SIZES`; one already so, or without sizes, is returned as it is."""
    if "sizes" in cfg or not all(k in cfg for k in OLD_SIZES):
        return cfg
    # A row or a config older than the `model` axis is the default workload's (the MLP's).
    model = str(cfg.get("model") or cards.DEFAULT)
    sizes = old_sizes(model, tuple(int(cfg[k]) for k in OLD_SIZES))
    kept = {k: v for k, v in cfg.items() if k not in OLD_SIZES}
    # In the place of the first of the three: a config's and a row's keys keep their order.
    at = list(cfg).index(OLD_SIZES[0])
    items = list(kept.items())
    return dict([*items[:at], ("sizes", sizes.named()), *items[at:]])


def migrate_row(row: dict) -> dict:
    """A timing run's row of any layout with its `sizes` as a `Sizes` (a row's JSON holds name
    -> value; older code's, `OLD_SIZES`). A row without sizes is damage, for its reader to
    name."""
    out = migrate_config(row)
    if isinstance(out.get("sizes"), dict):
        out = {**out, "sizes": Sizes.of(out["sizes"])}
    return out


class Row(TypedDict, total=False):
    """One case of a timing run, as rows.jsonl holds it (one JSON object per line). The axes of
    the case (`bench.cases.case.Case`'s fields) come first and are not listed here: they follow
    from Case. Times in ms, memory in GiB (2**30 bytes), work in GFLOP and GB (10**9)."""

    case_id: str
    status: str
    """`ok`, `unsupported`, `oom`, `nonfinite`, `timeout`, `error` (`bench.faults`)."""
    error: str
    """Why a row is not `ok` (or a note on an `ok` one, e.g. a recompilation)."""
    traceback: str
    """For a row an exception ended: its full traceback's file, relative to the folder
    (`errors/<case id>.txt`, `bench.store.errors`)."""
    world_size: int
    host: str
    """The host of the row's rank (in a run of several ranks the slowest rank's,
    `slowest_rank`)."""
    node_rank: int
    """The torchrun node (agent) of the row's rank: `GROUP_RANK`. A folder older than the
    column reads 0 where its ranks ran on one host."""
    local_rank: int
    """The row's rank among the ranks of its node: `LOCAL_RANK`."""
    hosts: str
    """In a run of several ranks: the distinct hosts of its ranks, sorted, comma-separated."""
    rank_hosts: str
    """Each rank's host, in rank order, comma-separated."""
    rank_node_ranks: str
    """Each rank's node rank, in rank order, comma-separated ("0,1": rank 1 on node 1)."""
    nodes: int
    """How many nodes (torchrun agents) the ranks ran on; 1 in a one-process run, and in a
    folder older than the column, the number of its `hosts`."""
    global_batch_size: int
    # The mode as it ran.
    autocast_dtype: str
    param_dtype: str
    scale_loss: bool
    matmul_dtype: str
    optimizer_impl: str
    fp8_linears: str
    tf32_matmul: bool
    tf32_cudnn: bool
    # The floor: counted work over the GPU's measured ceilings (`bench.measure.roofline`).
    ceiling_tflops: float
    copy_gbps: float
    fwd_gflop: float
    bwd_gflop: float
    step_gbytes: float
    cast_gbytes: float
    cast_ms_at_copy_bw: float
    fwd_floor_ms: float
    bwd_floor_ms: float
    step_floor_ms: float
    floor_ms: float
    comm_floor_ms: float
    # Memory (`bench.measure.memory`), each peak against the allocation at the case's start.
    residue_gib: float
    peak_alloc_gib: float
    peak_reserved_gib: float
    peak_fwd_gib: float
    peak_bwd_gib: float
    peak_opt_gib: float
    param_gib: float
    grad_gib: float
    optim_state_gib: float
    act_gib: float
    alloc_retries: float
    ooms: float
    output_dtype: str
    loss_dtype: str
    param_grad_dtype: str
    # Execution.
    prepare_s: float
    eager_parts: str
    recompiled: bool
    # Timed windows of `steps` steps the case has, and why no more (`bench.measure.adaptive`:
    # `narrow`, `time cap`, `window cap`, or `fixed` for a count asked for).
    windows: int
    windows_stop: str
    # GradScaler (`bench.measure.timing`): the untimed steps a scaled mode ran until its loss
    # scale settled (0 for a mode that does not scale), and the timed steps it skipped, left
    # out of every statistic. Absent (NaN) in folders older than the count: not counted there.
    scale_warmup_steps: int
    skipped_steps: int
    # Statistics of the samples (`bench.measure.stats.phase_columns`: `<phase>_ms` is the
    # median, with `_iqr`, `_p10`, `_p90` beside it) and what is derived from them.
    fwd_ms: float
    bwd_ms: float
    step_ms: float
    total_ms: float
    total_ms_iqr: float
    samples_per_s: float
    samples_per_s_per_gpu: float
    tflops: float
    pct_of_floor: float
    noisy: bool
    comm_ms: float
    nosync_fwd_bwd_ms: float
    # After the timed window.
    final_loss: float
    grad_scale: float | None
    rounds: int
    """Passes over the grid the case's windows come from (`run --rounds`), when more than 1."""
    elapsed_s: float
