"""The optional packages the site needs (the `site` extra: python-markdown for the reports,
plotly for the history charts and the plotly.js written beside the pages), and the one line that
says which are missing."""

from __future__ import annotations

import importlib.util

from bench.faults import UsageError

EXTRA = "site"
PACKAGES = {"markdown": "markdown", "plotly": "plotly"}
"""Module -> the package that brings it."""


def missing() -> list[str]:
    """The packages of the `site` extra that cannot be imported here."""
    return [pkg for module, pkg in PACKAGES.items() if importlib.util.find_spec(module) is None]


def require() -> None:
    """Nothing when the site's packages are there; else one line naming the missing ones."""
    lacking = missing()
    if lacking:
        raise UsageError(
            f"publish needs {' and '.join(lacking)}, which are not installed: "
            f"pip install 'ampbench[{EXTRA}]' (or: pip install {' '.join(lacking)})"
        )
