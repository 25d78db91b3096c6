"""Where each page and file of the site lies (the site mirrors the results folder), and the
relative link from one page to another; a link to a file the site does not hold resolves to
nothing, so no link of the site is broken."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bench.store import results
from bench.store.folders import gpu_slug

FRONT = PurePosixPath("index.html")
RUNS_PAGE = PurePosixPath("runs.html")
RUNS_DIR, HISTORY_DIR, ASSETS_DIR = "runs", "history", "assets"
PAGE = "index.html"
"""A run folder's page, inside the folder the site gives it."""


@dataclass
class Layout:
    """The pages the site has (markdown source -> page), the run folders that have a page, and
    the files a page linked, to be copied into the site (site path -> source)."""

    results_dir: Path
    pages: dict[Path, PurePosixPath] = field(default_factory=dict)
    folders: dict[Path, PurePosixPath] = field(default_factory=dict)
    copies: dict[PurePosixPath, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.results_dir = self.results_dir.resolve()
        self.pages[self.results_dir / "README.md"] = RUNS_PAGE

    def add_run(self, folder: Path) -> PurePosixPath:
        """Give run folder `folder` (in the results folder, at any depth) its page; returns it."""
        folder = folder.resolve()
        rel = folder.relative_to(self.results_dir)
        page = PurePosixPath(RUNS_DIR, *rel.parts, PAGE)
        self.folders[folder] = page
        self.pages[folder / results.REPORT] = page
        return page

    def add_markdown(self, path: Path) -> PurePosixPath:
        """Give a markdown file of a run folder (a comparison) a page beside the folder's."""
        path = path.resolve()
        page = self.folders[path.parent].parent / f"{path.stem}.html"
        self.pages[path] = page
        return page

    def add_history(self, history_md: Path, gpu: str) -> PurePosixPath:
        page = history_page(gpu)
        self.pages[history_md.resolve()] = page
        return page

    def target(self, path: Path) -> PurePosixPath | None:
        """The site path of `path` (of the results folder, linked from a page), or None where the
        site holds nothing for it; a file of a run folder lies beside its page."""
        path = path.resolve()
        if path in self.pages:
            return self.pages[path]
        if path in self.folders:
            return self.folders[path]
        folder = next((p for p in path.parents if p in self.folders), None)
        if folder is None or not path.is_file():
            return None
        dest = self.folders[folder].parent.joinpath(*path.relative_to(folder).parts)
        self.copies[dest] = path
        return dest


def history_page(gpu: str) -> PurePosixPath:
    return PurePosixPath(HISTORY_DIR, f"{gpu_slug(gpu)}.html")


def href(page: PurePosixPath, target: PurePosixPath, fragment: str = "") -> str:
    """The relative link from `page` to `target` (both site paths)."""
    link = posixpath.relpath(str(target), str(page.parent))
    return link + (f"#{fragment}" if fragment else "")


def root(page: PurePosixPath) -> str:
    """The relative path from `page` to the site's root folder, ending in `/` (or empty)."""
    depth = len(page.parts) - 1
    return "../" * depth
