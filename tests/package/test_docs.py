"""The documentation: the mkdocs site builds with --strict (a broken link or anchor, a page left
out of the nav, fails), the command-line reference is what the parser generates, every relative
link of the README, CONTRIBUTING.md and the pages leads to a file and heading that exist (on the
site and on GitHub, whose heading anchors differ), and the README stays a front page.

mkdocs comes from the `docs` extra, which the CI stage without vLLM installs (`.ci/run`)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: The issue's bound for a README that is a front page, not a manual (issue 33: "<= ~12 K").
README_MAX_CHARS = 12_000


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail('mkdocs is not installed: pip install -e ".[test,docs]" -c constraints.txt')
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", str(config), "--site-dir", str(site)],
                          capture_output=True, text=True, cwd=config.parent)


@pytest.mark.subprocess
def test_the_site_builds_strict_with_every_page(tmp_path):
    done = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    pages = sorted(p.stem for p in DOCS.glob("*.md"))
    built = sorted("index" if p.parent == tmp_path / "site" else p.parent.name
                   for p in (tmp_path / "site").rglob("index.html") if "search" not in p.parts)
    assert built == pages
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert 'id="ruler-sources-fetch"' in cli and "--output-budget N" in cli
    assert not list((tmp_path / "site").rglob("*.py"))  # the scripts beside the pages stay out


@pytest.mark.subprocess
def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    """What the strict build above would catch: the site's validation settings at work."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text() + "\n[gone](building.md#no-such-heading) [lost](lost.md)\n")
    done = _mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "lost.md" in done.stderr and "#no-such-heading" in done.stderr, done.stderr[-3000:]


@pytest.mark.subprocess
def test_the_cli_reference_is_generated_from_the_parser(tmp_path):
    """docs/cli.md is what docs/cli_reference.py writes now (in a fresh process: a backend a
    test registered here would be on the page), whoever writes it: the cache folders the help
    names are a user's defaults (~/.cache/ruler), not this machine's home or environment."""
    for env in ({}, {"RULER_CACHE": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path),
                     "HOME": str(tmp_path / "home"), "RULER_SOURCES": str(tmp_path)}):
        done = subprocess.run([sys.executable, str(DOCS / "cli_reference.py"), "--check"],
                              capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, **env})
        assert done.returncode == 0, (env, done.stderr)
    assert "~/.cache/ruler/sources" in (DOCS / "cli.md").read_text()


def _slugs(text: str) -> tuple[str, str]:
    """A heading's anchor on the site (Python-Markdown's toc) and on GitHub."""
    from markdown.extensions.toc import slugify

    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("`", "").replace("*", "")
    github = re.sub(r"[^\w\- ]", "", plain.strip().lower()).replace(" ", "-")
    return slugify(plain, "-"), github


def _headings(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)


def _links(path: Path) -> list[tuple[str, str]]:
    """Relative links (and images) outside code: (target, anchor)."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    found = re.findall(r"\]\(([^)\s]*)\)", text)
    return [tuple((target.split("#", 1) + [""])[:2]) for target in found
            if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("doc", ["README.md", "CONTRIBUTING.md",
                                 *sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))])
def test_relative_links_lead_to_files_and_headings_on_the_site_and_on_github(doc):
    source = ROOT / doc
    for target, anchor in _links(source):
        path = (source.parent / target).resolve() if target else source
        assert path.is_file(), f"{doc}: {target} does not exist"
        if anchor:
            assert path.suffix == ".md", f"{doc}: #{anchor} on {target}"
            slugs = [_slugs(h) for h in _headings(path)]
            assert any(anchor == site for site, _ in slugs), f"{doc}: {target}#{anchor} (site)"
            assert any(anchor == hub for _, hub in slugs), f"{doc}: {target}#{anchor} (GitHub)"


def test_the_readme_is_a_front_page():
    """What it is, the install, the quick start, where to go next: every page linked."""
    text = README.read_text()
    assert len(text) <= README_MAX_CHARS, len(text)
    linked = {target for target, _ in _links(README)}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages <= linked, sorted(pages - linked)


def test_adding_a_benchmark_quotes_the_plugin_test():
    """docs/extending.md's "Adding a benchmark" is written from the plug-in the tests install
    (tests/package/test_plugin_package.py, benchmark `lex`): every line of its code excerpts,
    but the elided ones (`...`), is a line (or the start of one) of that package."""
    import importlib.util

    path = ROOT / "tests" / "package" / "test_plugin_package.py"
    spec = importlib.util.spec_from_file_location("plugin_package_source", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    package = "\n".join([module.PYPROJECT, *module.MODULES.values()])
    text = (DOCS / "extending.md").read_text()
    section = text.split("## Adding a benchmark\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:python|toml)\n(.*?)```", section, re.S)
    assert len(blocks) >= 6
    quoted = [line.strip() for block in blocks for line in block.splitlines()
              if line.strip() and "..." not in line]
    missing = [line for line in quoted if line not in package]
    assert missing == [], missing
