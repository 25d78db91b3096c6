"""The study's tables: files, columns, what a row is about (columns, never the `tensor` label), and
reading a folder back, what it predates read as empty. No torch: a folder renders without it."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.faults import UsageError
from bench.store import errors, frames
from bench.store.results import read_env

INPUT, ACTIVATION, LOG_SOFTMAX, LOSS = "input", "activation", "log_softmax", "loss"
ACTIVATION_GRAD, PRODUCED_GRAD, PARAM_GRAD = "activation_grad", "produced_grad", "param_grad"
"""`produced_grad`: a parameter's gradient as its matmul produced it, before any cast to the
parameter's dtype; `param_grad`: `param.grad`."""
OPTIM_STATE = "optim_state"
FP8_GEMM = "fp8_gemm"
"""An audit row about one float8 GEMM of the step (operands, scales), labelled by its order."""
PHASE = {
    **dict.fromkeys((INPUT, ACTIVATION, LOG_SOFTMAX, LOSS), "forward"),
    **dict.fromkeys((ACTIVATION_GRAD, PRODUCED_GRAD, PARAM_GRAD), "backward"),
    OPTIM_STATE: "optimizer",
}
"""The phase of the step that makes each kind of tensor."""
POOLED = "all"
"""`module` of an fp16_fate row about every activation gradient pooled together."""
TENSOR_COLUMNS = ("kind", "module", "state", "phase")
"""The columns that say which tensor a row is about (a table has those that apply to it)."""


def audit_tensor(
    kind: str, module: str = "", state: str = "", *, logits: bool = False
) -> dict[str, str]:
    """An audit row's tensor columns and label; `logits`: the module's output is the logits."""
    if kind in (ACTIVATION, ACTIVATION_GRAD):
        label = f"logits ({module} output)" if logits else f"{module} output"
        label = label if kind == ACTIVATION else f"grad of {label}"
    else:
        label = {
            INPUT: "input x",
            LOG_SOFTMAX: "log-softmax output",
            LOSS: "loss",
            PRODUCED_GRAD: f"{module} grad as its matmul produced it",
            PARAM_GRAD: f"{module}.grad",
            OPTIM_STATE: f"Adam {state}",
        }[kind]
    return {"kind": kind, "module": module, "state": state, "phase": PHASE[kind], "tensor": label}


def grad_tensor(kind: str, module: str) -> dict[str, str]:
    """The columns of a census or fp16_fate row that say which gradient it is, with its label."""
    if module == POOLED:
        label = "all activation grads"
    elif kind == ACTIVATION_GRAD:
        label = f"grad of {module} output"
    else:
        label = f"{module} grad"
    return {"kind": kind, "module": module, "tensor": label}


_LEGACY = [
    # (label pattern, kind): the labels of folders written before the tensor columns existed,
    # most specific first. The module is the pattern's group, as those folders named it.
    (r"input x", INPUT),
    (r"log-softmax output", LOG_SOFTMAX),
    (r"loss", LOSS),
    (r"all activation grads", ACTIVATION_GRAD),
    (r"grad of logits \((.+) output\)", ACTIVATION_GRAD),
    (r"grad of (.+) output", ACTIVATION_GRAD),
    (r"logits \((.+) output\)", ACTIVATION),
    (r"(.+) grad as its matmul produced it", PRODUCED_GRAD),
    (r"Adam (.+)", OPTIM_STATE),
    (r"(.+)\.grad", PARAM_GRAD),
    (r"(.+) grad", PRODUCED_GRAD),
    (r"(.+) output", ACTIVATION),
]


def legacy_tensor(label: str) -> dict[str, str] | None:
    """The tensor columns of an older folder's label (Adam's module filled later), or None."""
    for pattern, kind in _LEGACY:
        m = re.fullmatch(pattern, label)
        if m is None:
            continue
        group = m.group(1) if m.groups() else ""
        if label == "all activation grads":
            group = POOLED
        # Those folders wrote the ReLU's module as "ReLU": its module name is "relu".
        module, state = ("", group) if kind == OPTIM_STATE else (group.lower(), "")
        return {"kind": kind, "module": module, "state": state, "phase": PHASE[kind]}
    return None


CSV, GZ, NPZ = "csv", "csv.gz", "npz"
FORMS = (CSV, GZ, NPZ)
"""The forms a table's file takes: CSV, gzipped CSV (pandas reads it as it is), numpy's .npz
(`bench.store.frames`: a transformer's traces run to tens of MB even as gzipped CSV)."""


@dataclass(frozen=True)
class Table:
    file: str
    columns: tuple[str, ...]
    """Every column, in order (an empty table's file holds them)."""
    labelled: bool = False
    """Rows name a tensor: `load` derives older folders' tensor columns from their labels."""
    optional: bool = False
    """A table that folders older than it lack: such a folder reads it as empty."""
    form: str = CSV
    """How this version writes the table (`FORMS`): compressed where it runs to MBs."""

    def forms(self, run_dir: Path) -> dict[str, Path]:
        """The table's file in `run_dir` in each form, the form this version writes first."""
        stem = self.file.removesuffix(".csv")
        paths = {CSV: run_dir / self.file, GZ: run_dir / f"{self.file}.gz"}
        paths[NPZ] = run_dir / f"{stem}.npz"
        return {self.form: paths[self.form], **paths}

    def path(self, run_dir: Path) -> Path:
        """The table's file in `run_dir`: the one the folder has (an older folder's may be of
        another form), else the file this version writes."""
        found = [p for p in self.forms(run_dir).values() if p.is_file()]
        return found[0] if found else self.forms(run_dir)[self.form]


TABLES: dict[str, Table] = {
    # A row per tensor and mode: hundreds of KB for a transformer's hundreds of observed tensors.
    "audit": Table(
        "audit.csv", ("mode", *TENSOR_COLUMNS, "tensor", "dtype"), labelled=True, form=GZ
    ),
    "audit_ops": Table(
        "audit_ops.csv", ("mode", "phase", "op", "inputs", "outputs", "input_shapes"), form=GZ
    ),
    "census": Table(
        "census.csv",
        (
            *("batch_size", "step", "loss_scale", "mode", "kind", "module", "tensor", "dtype"),
            *("numel", "flushed", "subnormal", "nonfinite", "ref_zero", "rel_err", "loss"),
            "flushed_norm",
        ),
        labelled=True,
        form=GZ,
    ),
    "histogram": Table(
        "histogram.csv",
        ("batch_size", "step", "loss_scale", "module", "bin", "log2_lo", "count", "share"),
    ),
    "fp16_fate": Table(
        "fp16_fate.csv",
        (
            *("batch_size", "step", "loss_scale", "kind", "module", "tensor", "shift"),
            *("multiplier", "fp16_flushed", "fp16_subnormal", "fp16_overflow"),
        ),
        labelled=True,
    ),
    "steps": Table(
        "convergence_steps.csv",
        ("mode", "batch_size", "seed", "optimizer", "steps", "step", "loss", "scale", "skipped"),
        form=GZ,
    ),
    "evals": Table(
        "convergence_evals.csv",
        ("mode", "batch_size", "seed", "optimizer", "steps", "step", "heldout_loss", "heldout_acc"),
    ),
    "runs": Table(
        "convergence_runs.csv",
        (
            *("mode", "batch_size", "seed", "optimizer", "steps", "step_ms", "model_state_gib"),
            "true_heldout_loss",
        ),
    ),
    "summary": Table(
        "summary.csv",
        (
            *("mode", "batch_size", "seed", "optimizer", "final_loss", "heldout_loss"),
            *("heldout_acc", "nonfinite_steps", "skipped_steps", "final_scale", "step_ms"),
            *("target_loss", "steps_to_target", "time_to_target_s"),
            *("diverged_at_step", "divergence", "model_state_gib"),
        ),
    ),
    "traces": Table(
        "convergence_traces.csv",
        (
            *("mode", "batch_size", "seed", "optimizer", "steps", "step", "module", "loss"),
            *("scale", "skipped", "grad_zero_share", "exp_avg_sq_median"),
            *("exp_avg_sq_below_eps2_share", "exp_avg_abs_median", "update_rms_ratio"),
            *("update_max_abs", "update_underflow_share", "unchanged_share"),
        ),
        optional=True,
        form=NPZ,
    ),
    "failed": Table(
        "failed.csv", ("kind", "mode", "batch_size", "seed", "status", "error", errors.COLUMN)
    ),
}
"""The study's CSV files by table name (the names job outputs use)."""
AUDIT_JSON, ENV, REPORT = "audit.json", "env.json", "report.md"


def frame(name: str, rows: list[dict]) -> pd.DataFrame:
    """Rows of a table as a DataFrame; no rows give the table's columns and no row."""
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(TABLES[name].columns))


def write(run_dir: Path, name: str, df: pd.DataFrame) -> None:
    """A table's file in its form, with its columns; the same rows make the same bytes."""
    if df.empty and not len(df.columns):
        df = frame(name, [])
    table = TABLES[name]
    forms = table.forms(run_dir)
    for other in list(forms.values())[1:]:
        other.unlink(missing_ok=True)  # a resumed older folder's file of another form
    if table.form == NPZ:
        frames.write(df, forms[NPZ])
    else:
        gz = {"method": "gzip", "mtime": 0} if table.form == GZ else None
        df.to_csv(forms[table.form], index=False, compression=gz)


def compact(run_dir: Path) -> list[str]:
    """Rewrite each table `run_dir` keeps in another form than this version's, content unchanged
    (an `.npz` checked to read back equal before the CSV goes); returns what it rewrote."""
    done = []
    for name, table in TABLES.items():
        path, want = table.path(run_dir), table.forms(run_dir)[table.form]
        if path == want or not path.is_file():
            continue
        if table.form == GZ and path.suffix == ".csv":
            want.write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))
        else:
            try:
                df = frames.read_csv(path)
            except pd.errors.EmptyDataError:  # nothing to keep: written anew with its columns
                df = frame(name, [])
            if table.form == NPZ:
                frames.write(df, want)
                if not frames.read(want).equals(df):
                    want.unlink()
                    raise UsageError(f"{path}: its rows do not survive {want.name}; kept as is")
            else:
                df.to_csv(want, index=False, compression={"method": "gzip", "mtime": 0})
        path.unlink()
        done.append(f"{path.name} -> {want.name}")
    return done


def load(run_dir: Path) -> dict[str, object]:
    """Every table of a finished study by name, with `audit_json`, `env` and `files`."""
    files = [t.path(run_dir) for t in TABLES.values() if not t.optional] + [run_dir / AUDIT_JSON]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise UsageError(
            f"{run_dir}: no {', '.join(missing)}: the study has not finished; resuming it "
            "finishes it"
        )
    out: dict[str, object] = {name: read(run_dir, name) for name in TABLES}
    out["audit_json"] = audit_json(json.loads((run_dir / AUDIT_JSON).read_text()))
    out["files"] = {name: table.path(run_dir).name for name, table in TABLES.items()}
    out["env"] = read_env(run_dir)
    return out


def audit_json(found: dict) -> dict:
    """audit.json's content as this version reads it (older: `chain_to_<param>` keys)."""
    found = dict(found)
    for key in [k for k in found if k.startswith("chain_to_")]:
        name = key.removeprefix("chain_to_")
        module, _, param = name.rpartition("_")
        found.setdefault("chains", found.pop(key))
        found.setdefault("chained", f"{module}.{param}")
    found.setdefault("chains", {})
    found.setdefault("unsupported", {})
    found.setdefault("tracebacks", {})
    return found


AUDIT_FAILED = "failed: "
"""What audit.json's `unsupported` puts before the error of a mode the audit failed on
(`bench.numerics.measure.audit.run_modes`); a mode that cannot run here has its reason alone."""


def read(run_dir: Path, name: str) -> pd.DataFrame:
    """One table of a folder, as `load` reads it (columns it predates empty)."""
    table = TABLES[name]
    path = table.path(run_dir)
    try:
        df = frames.read(path) if path.suffix == ".npz" else frames.read_csv(path)
    except pd.errors.EmptyDataError:  # an empty table of an older folder: not even a header
        df = pd.DataFrame()
    except FileNotFoundError:  # an optional table the folder predates (`load` checks the rest)
        df = pd.DataFrame()
    if df.empty:
        return pd.DataFrame(columns=list(table.columns))
    if table.labelled and "kind" not in df.columns:
        df = _derive_tensor_columns(df, table, path)
    for col in table.columns:
        if col not in df.columns:  # a column the folder predates: empty, as if not measured
            df[col] = float("nan")
    # The table's own order, whatever version wrote the folder; columns it does not name after.
    df = df[[*table.columns, *(c for c in df.columns if c not in table.columns)]]
    for col in TENSOR_COLUMNS:
        if col in df.columns:
            # An empty cell (no module, no state) reads as NaN, and a column with no text at
            # all as float64: object first, so that "" fills it.
            df[col] = df[col].astype(object).fillna("")
    return df


def _derive_tensor_columns(df: pd.DataFrame, table: Table, path: Path) -> pd.DataFrame:
    by_label = {label: legacy_tensor(label) for label in set(df["tensor"])}
    unknown = sorted(label for label, t in by_label.items() if t is None)
    if unknown:
        raise UsageError(f"{path}: tensor label {unknown[0]!r} is not one this version knows")
    # Those folders audited the Adam state of their first weight, as this version does.
    first = next(
        (
            t["module"]
            for label in df["tensor"]
            if (t := by_label[label])["kind"] == PARAM_GRAD and t["module"].endswith(".weight")
        ),
        "",
    )
    derived = [c for c in table.columns if c in TENSOR_COLUMNS]
    for col in derived:
        df[col] = df["tensor"].map(
            lambda label, col=col: (
                first
                if col == "module" and by_label[label]["kind"] == OPTIM_STATE
                else by_label[label][col]
            )
        )
    lead = [c for c in table.columns if c in df.columns]
    return df[lead + [c for c in df.columns if c not in lead]]
