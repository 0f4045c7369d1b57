"""Swapping a pinned source's spec for one test: the table of sources is a registry (each
benchmark registers its own), which takes no item assignment."""

from __future__ import annotations

import dataclasses

from ruler.catalog import sources


def swap_source(monkeypatch, spec: sources.SourceSpec) -> None:
    """`sources.SOURCES[spec.id]` is `spec` until the test ends."""
    table = sources.SOURCES
    table[spec.id]  # loaded
    entries = dict(table._entries)
    entries[spec.id] = dataclasses.replace(entries[spec.id], obj=spec)
    monkeypatch.setattr(table, "_entries", entries)
