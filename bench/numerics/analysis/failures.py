"""What of a study failed (audit modes, jobs); one that cannot run here (`unsupported`) did not."""

from __future__ import annotations

import json
from pathlib import Path

from bench.numerics.measure.tables import AUDIT_FAILED, AUDIT_JSON, audit_json, read


def audit_failures(found: dict) -> dict[str, str]:
    """Mode -> the error of each mode the audit failed on (not those that cannot run here)."""
    return {
        mode: why.removeprefix(AUDIT_FAILED)
        for mode, why in found.get("unsupported", {}).items()
        if why.startswith(AUDIT_FAILED)
    }


def failures(run_dir: Path) -> str | None:
    """What of a finished study failed, in one line (audit modes, jobs per kind), or None."""
    parts = []
    audit = audit_failures(audit_json(json.loads((run_dir / AUDIT_JSON).read_text())))
    if audit:
        parts.append(f"the dtype audit of {', '.join(audit)}")
    failed = read(run_dir, "failed")
    failed = failed[failed["status"] != "unsupported"]
    for kind, rows in failed.groupby("kind", sort=False):
        runs = dict.fromkeys(
            f"{r.mode} b{int(r.batch_size)} s{int(r.seed)}" for r in rows.itertuples()
        )
        parts.append(f"{kind} of {', '.join(runs)}")
    return "; ".join(parts) or None
