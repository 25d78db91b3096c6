"""A criteria file: the user's own expectations of a run, as expressions over its rows, read and
validated (`read`) before anything is checked (`bench.publish.criteria` checks them:
`ampbench check RUN --criteria FILE`).

A report never judges a run: what counts as good enough depends on the GPU, the model and the
user. The user writes it down in a TOML file of `[[criterion]]` tables; this module evaluates it
against a run's rows (`results.load`) and env.json, in the manner of pytest-benchmark's
`--benchmark-compare-fail`. Keys of a criterion:

- `name` (required): what the line says.
- `expect` (required): a `DataFrame.eval` expression that must hold (True/False per row).
- `where`: a `DataFrame.query` expression choosing the rows (default: every row). A chosen row
  whose status is not `ok` fails the criterion with its status (add `status == 'ok'` to `where`
  to leave failed rows out). No row chosen fails it with "no row matches".
- `require`: `"all"` (default: every chosen row satisfies `expect`) or `"any"` (at least one
  does: "the best parallelism reaches ...").
- `ratio = {numerator = "...", denominator = "...", column = "total_ms", reduce = "min"}`: instead
  of rows, one number: `column` over the rows the numerator query chooses divided by `column` over
  the denominator's (both among the `where` rows). `reduce` (`min`, `max`, `median`, `mean`)
  makes each side one value; without it each side must choose one row. `expect` names the
  number `ratio`, e.g. `"ratio >= 1.4"`.
- `env = "overhead.overhead_pct"`: instead of the rows, the values of env.json at a dotted path,
  one row each (a list on the way gives one per entry); `expect` names the value by the path's
  last key, e.g. `"abs(overhead_pct) <= 2"`, and `where` and `require` apply as to rows. An entry
  without the value fails as a row not `ok` would, named with the `error` it records; none with
  it at all is nothing to judge (`if_missing`).
- `gpu = "H200"`: the criterion applies only to runs whose env.json `gpu` contains this text
  (case-insensitive); on another GPU it is skipped with a SKIP line.
- `if_missing`: `"fail"` (default) or `"skip"`: what a criterion with nothing to judge (no row
  matches, an env.json value absent) reports; `"skip"` suits a file shared by runs of
  different grids.
- `comparison = true`: judge the rows of a comparison (`ampbench ab` or `compare` with
  `--criteria FILE`), one per case, instead of a run's: the columns of verdicts.csv
  (`verdict`, `ratio`, `memory_verdict`, `memory_change_pct`, ...), e.g. "no case uses more
  memory": `expect = "memory_verdict != 'more memory'"`. `ampbench check` skips it, and the
  comparison skips the criteria that judge a run.

Besides its criteria, a file may hold one `[memory]` table: `tolerance = "2MiB,1%"`, the memory
verdicts' tolerance for a comparison checked against it (`bench.verdicts.memory.Tolerance`;
`--memory-tolerance` overrides it).

Expressions see the columns of `results.load` (axes, status, total_ms, pct_of_floor,
speedup_vs_fp32, scaling_efficiency, ...), with pandas' syntax: `and`, `or`, `in [...]`, `abs()`.
A value that was not measured (NaN) never satisfies `expect`.

A bad file (not TOML, an unknown key, an unknown column, an expression pandas cannot evaluate)
raises `CriteriaError` naming the criterion and the bad value, before anything is printed: the
file's shape here, its expressions when they are checked. Reading a file needs the standard
library alone (and tomli before Python 3.11). docs/criteria.md has examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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

    def applies_to(self, env: dict) -> bool:
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
