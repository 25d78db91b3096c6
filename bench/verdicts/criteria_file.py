"""A criteria file, read and validated (`read`) before anything is checked: its `[[criterion]]`
tables and `[memory]` tolerance. A bad file raises `CriteriaError` naming the criterion and the bad
value. docs/criteria.md documents the keys, with examples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.store.run_env import RunEnv
from bench.verdicts.memory import Tolerance

REQUIRES = ("all", "any")
IF_MISSING = ("fail", "skip")
REDUCES = ("min", "max", "median", "mean")
KEYS = ("name", "expect", "where", "require", "ratio", "env", "gpu", "if_missing", "comparison")
MEMORY_KEYS = ("tolerance",)
"""The keys of a file's `[memory]` table."""
RATIO_KEYS = ("numerator", "denominator", "column", "reduce")


class CriteriaError(ValueError):
    """A criteria file that cannot be checked: one line naming the criterion and the bad value."""


@dataclass(frozen=True, kw_only=True)
class Ratio:
    """`column` over the numerator's rows divided by `column` over the denominator's."""

    numerator: str
    denominator: str
    column: str
    reduce: str | None = None

    def __post_init__(self) -> None:
        for key in ("numerator", "denominator", "column"):
            _require_text(f"ratio.{key}", getattr(self, key))
        if self.reduce is not None and self.reduce not in REDUCES:
            raise ValueError(
                f"ratio.reduce must be one of {', '.join(REDUCES)}, got {self.reduce!r}"
            )


@dataclass(frozen=True, kw_only=True)
class Criterion:
    """One `[[criterion]]` table of a criteria file (the module docstring lists its keys)."""

    name: str
    expect: str
    where: str | None = None
    require: str = "all"
    ratio: Ratio | None = None
    env: str | None = None
    gpu: str | None = None
    if_missing: str = "fail"
    comparison: bool = False

    def __post_init__(self) -> None:
        _require_text("name", self.name)
        _require_text("expect", self.expect)
        for key in ("where", "env", "gpu"):
            if getattr(self, key) is not None:
                _require_text(key, getattr(self, key))
        if self.require not in REQUIRES:
            raise ValueError(f"require must be one of {', '.join(REQUIRES)}, got {self.require!r}")
        if self.if_missing not in IF_MISSING:
            raise ValueError(
                f"if_missing must be one of {', '.join(IF_MISSING)}, got {self.if_missing!r}"
            )
        if self.env is not None and self.ratio is not None:
            raise ValueError("a criterion judges either env or a ratio, not both")
        if not isinstance(self.comparison, bool):
            raise ValueError(f"comparison must be true or false, got {self.comparison!r}")
        if self.comparison and (self.env is not None or self.ratio is not None):
            raise ValueError("a comparison criterion judges its rows, not env or a ratio")
        if self.require != "all" and self.ratio is not None:
            raise ValueError("require applies to rows; a ratio criterion judges one value")

    @classmethod
    def from_table(cls, table: object) -> Criterion:
        if not isinstance(table, dict):
            raise ValueError(f"a criterion must be a table, got {table!r}")
        unknown = [k for k in table if k not in KEYS]
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; the keys are {', '.join(KEYS)}")
        for key in ("name", "expect"):
            if key not in table:
                raise ValueError(f"no {key!r}")
        fields = dict(table)
        if "ratio" in fields:
            ratio = fields["ratio"]
            if not isinstance(ratio, dict):
                raise ValueError(f"ratio must be a table, got {ratio!r}")
            unknown = [k for k in ratio if k not in RATIO_KEYS]
            if unknown:
                raise ValueError(
                    f"unknown key ratio.{unknown[0]}; the keys are {', '.join(RATIO_KEYS)}"
                )
            missing = [k for k in RATIO_KEYS[:3] if k not in ratio]
            if missing:
                raise ValueError(f"ratio has no {missing[0]!r}")
            fields["ratio"] = Ratio(**ratio)
        return cls(**fields)

    def applies_to(self, env: RunEnv) -> bool:
        return self.gpu is None or self.gpu.lower() in str(env.get("gpu") or "").lower()


def _require_text(key: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string, got {value!r}")


def _toml():
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:
        try:
            import tomli as tomllib
        except ModuleNotFoundError as exc:
            raise CriteriaError(
                "reading a criteria file needs tomli on Python < 3.11 (pip install tomli)"
            ) from exc
    return tomllib


def read(path: Path) -> list[Criterion]:
    """The criteria of a TOML file, validated; `CriteriaError` names what is wrong."""
    tomllib = _toml()
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise CriteriaError(f"criteria file {path}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CriteriaError(f"criteria file {path} cannot be read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CriteriaError(f"{path} is not valid TOML ({exc})") from exc
    unknown = [k for k in data if k not in ("criterion", "memory")]
    if unknown:
        raise CriteriaError(f"{path}: unknown key {unknown[0]!r}; write [[criterion]] tables")
    tables = data.get("criterion")
    if not isinstance(tables, list) or not tables:
        raise CriteriaError(f"{path} has no [[criterion]] table")
    _memory_table(path, data)
    out = []
    for i, table in enumerate(tables, start=1):
        try:
            out.append(Criterion.from_table(table))
        except (TypeError, ValueError) as exc:
            name = f" ({table['name']!r})" if isinstance(table, dict) and "name" in table else ""
            raise CriteriaError(f"{path}: criterion {i}{name}: {exc}") from exc
    return out


def _memory_table(path: Path, data: dict) -> str | None:
    """The `[memory]` table's tolerance, checked; None where the file has none."""
    table = data.get("memory", {})
    if not isinstance(table, dict):
        raise CriteriaError(f"{path}: memory must be a table ([memory]), got {table!r}")
    unknown = [k for k in table if k not in MEMORY_KEYS]
    if unknown:
        raise CriteriaError(
            f"{path}: unknown key memory.{unknown[0]}; the keys are {', '.join(MEMORY_KEYS)}"
        )
    tolerance = table.get("tolerance")
    if tolerance is None:
        return None
    try:
        Tolerance.parse(str(tolerance))
    except ValueError as exc:
        raise CriteriaError(f"{path}: memory.tolerance: {exc}") from exc
    return str(tolerance)


def memory_tolerance(path: Path) -> str | None:
    """The memory tolerance a criteria file sets (`[memory] tolerance`), or None."""
    read(path)  # the whole file is checked before any of it is used
    return _memory_table(path, _toml().loads(Path(path).read_text()))
