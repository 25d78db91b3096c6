"""What a results folder is, and how folders written by older code are read today.

env.json records `schema` (`SCHEMA_VERSION`) and `kind` (a key of `KINDS`) from this version on.
A folder from before carries neither: its kind is read from the key that holds its job's settings
(`config`, `maxbatch_config`, `numerics_config`) or, for a numerics study older than those, from
its audit.json. Every reading of an older folder's layout lives here (`migrate_env`,
`migrate_row`), so the rest of the code sees one shape.
"""

from __future__ import annotations

from pathlib import Path

SCHEMA_VERSION = 2
"""1: every folder written before env.json recorded a version (the key is absent). 2: env.json
has `schema` and `kind`; `overhead` is a list of checks."""

KINDS = {
    "timing": ("config", "a timing run"),
    "maxbatch": ("maxbatch_config", "a largest-batch search"),
    "numerics": ("numerics_config", "a numerics study"),
}
"""A folder's kind -> (the env.json key of its job's settings, what it is in words)."""

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
    Version 1 lacks `schema` and `kind`, and its `overhead` was one check (a dict)."""
    out = dict(env)
    out.setdefault("schema", 1)
    kind = kind_of(out, folder)
    if kind is not None:
        out.setdefault("kind", kind)
    if isinstance(out.get("overhead"), dict):
        out["overhead"] = [out["overhead"]]
    return out
