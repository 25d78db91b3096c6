"""A report's markdown to HTML for the site (python-markdown, `tables` and `toc`): links pointed
into the site, tables made sortable, and compare verdict cells marked `slower` or `faster`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from bench.publish.site.layout import Layout, href

EXTENSIONS = ("tables", "toc", "md_in_html")
VERDICT = re.compile(r"\b(slower|faster)\b")
VERDICT_CELL = 60
"""Longest cell text that is taken for a verdict; a longer one is prose."""
SORTABLE = "sortable"
SITE = "site"
"""The scheme of a link to a path in the site (`site:history/NVIDIA-H200.html`)."""
DETAILS = re.compile(r"<details>", re.I)


class _SiteTree(Treeprocessor):
    def __init__(self, md: markdown.Markdown, link: Callable[[str], str | None]) -> None:
        super().__init__(md)
        self.link = link

    def run(self, root: etree.Element) -> None:
        for parent in list(root.iter()):
            for i, child in enumerate(list(parent)):
                if child.tag == "table":
                    child.set("class", SORTABLE)
                    frame = etree.Element("div", {"class": "table-frame"})
                    parent.remove(child)
                    frame.append(child)
                    parent.insert(i, frame)
                elif child.tag == "a" and child.get("href") is not None:
                    target = self.link(child.get("href", ""))
                    if target is None:  # nothing in the site to go to: its text only
                        child.tag = "span"
                        child.set("class", "unlinked")
                        child.set("title", child.attrib.pop("href"))
                    else:
                        child.set("href", target)
                elif child.tag == "img":
                    target = self.link(child.get("src", ""))
                    if target is None:  # a figure the folder lacks: said, not a broken image
                        alt = child.get("alt") or child.attrib.pop("src", "")
                        child.attrib.clear()
                        child.tag, child.text = "span", f"(figure not in the folder: {alt})"
                        child.set("class", "unlinked")
                    elif parent.tag != "a":  # a click opens the figure at its full size
                        child.set("src", target)
                        frame = etree.Element("a", {"href": target, "class": "figure"})
                        parent.remove(child)
                        frame.append(child)
                        frame.tail, child.tail = child.tail, None
                        parent.insert(i, frame)
                    else:
                        child.set("src", target)
                elif child.tag == "td":
                    text = "".join(child.itertext()).strip()
                    found = VERDICT.search(text)
                    if found and len(text) <= VERDICT_CELL:
                        child.set("class", found[1])


class _Site(Extension):
    def __init__(self, link: Callable[[str], str | None]) -> None:
        super().__init__()
        self.link = link

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # the library's name
        # After the inline patterns (priority 20) have made the links and images.
        md.treeprocessors.register(_SiteTree(md, self.link), "ampbench_site", 5)


def linker(layout: Layout, source_dir: Path, page: PurePosixPath) -> Callable[[str], str | None]:
    """What a link of a markdown file in `source_dir` becomes on site page `page`: a relative
    link into the site, the link itself (the web, an anchor), or None (nothing to go to)."""

    def link(url: str) -> str | None:
        parts = urlsplit(url)
        if parts.scheme == SITE:
            return href(page, PurePosixPath(parts.path), parts.fragment)
        if parts.scheme or parts.netloc:
            return url if parts.scheme in ("http", "https", "mailto") else None
        if not parts.path:
            return url  # an anchor of this page
        target = layout.target(source_dir / unquote(parts.path))
        return None if target is None else href(page, target, parts.fragment)

    return link


def to_html(text: str, layout: Layout, source_dir: Path, page: PurePosixPath) -> str:
    """The HTML of markdown `text` written in `source_dir`, as site page `page` shows it."""
    # A table inside <details> (a report's long tables) is markdown too: md_in_html reads the
    # inside of a block only when it says so.
    text = DETAILS.sub('<details markdown="1">', text)
    md = markdown.Markdown(extensions=[*EXTENSIONS, _Site(linker(layout, source_dir, page))])
    return md.convert(text)
