"""A committed record's file name, ``<gpu-slug>-<date>[.<seq>][-<tag>].json`` (what
:func:`gpu_viz.measure.records.save_record` writes): its kind, its place in time, and the newest
record of each kind -- the records the wheel ships (hatch_build.py loads this file by path while
the wheel is built, so it imports nothing but the standard library).

A record's kind is its GPU and its tag: ``nvidia-h200-2026-12-03.3-fused.json`` is of kind
``("nvidia-h200", "fused")``; ``...-quick-fused.json`` and ``...-gpu-check-notebooks.json`` are
kinds of their own.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

NAME = re.compile(r"^(?P<gpu>.+?)-(?P<date>\d{4}-\d{2}-\d{2})(?:\.(?P<seq>\d+))?(?:-(?P<tag>.+))?\.json$")


def parse(name: str) -> Optional[Dict]:
    """``{"gpu", "date", "seq", "tag"}`` of a record's file name (``seq`` 1 without a ``.N``,
    ``tag`` "" without one), or None for a name of another form."""
    m = NAME.match(name)
    if not m:
        return None
    return {"gpu": m["gpu"], "date": m["date"], "seq": int(m["seq"] or 1), "tag": m["tag"] or ""}


def sequence(name: str) -> int:
    """The same day's sequence number of a record's file name: the ``.N`` after its date, else 1."""
    parsed = parse(name)
    return parsed["seq"] if parsed else 1


def kind(name: str) -> Optional[Tuple[str, str]]:
    """(GPU slug, tag) of a record's file name, or None for a name of another form."""
    parsed = parse(name)
    return (parsed["gpu"], parsed["tag"]) if parsed else None


def _complete(path: Path) -> bool:
    """False only for a record that says it was cut short (``"complete": false``)."""
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("complete", True) is not False
    except (OSError, ValueError, AttributeError):
        return False


def _tests_of(path: Path) -> List[str]:
    """The pytest node ids (parameters left out) a GPU test run record ran, passed or failed."""
    try:
        summary = json.loads(path.read_text(encoding="utf-8")).get("pytest_gpu") or {}
    except (OSError, ValueError, AttributeError):
        return []
    ids = list(summary.get("passed") or []) + [str(f.get("test", "")) for f in summary.get("failed") or []]
    return sorted({t.split("[", 1)[0] for t in ids if t})


def newest_of_each_kind(paths: Iterable[Path]) -> List[Path]:
    """The newest record of each kind among ``paths`` (date, then the day's sequence number), a
    complete one before one cut short; sorted by file name.  Files whose names are not a
    record's are left out.  A GPU test run (tag ``gpu-check...``) may have run only some of the
    tests: of those, every record that is the newest to have run some test is kept too, so each
    test's newest outcome ships."""
    by_kind: Dict[Tuple[str, str], List[Path]] = {}
    for path in map(Path, paths):
        k = kind(path.name)
        if k is not None:
            by_kind.setdefault(k, []).append(path)

    def rank(path: Path):
        parsed = parse(path.name)
        return _complete(path), parsed["date"], parsed["seq"]

    keep = {max(group, key=rank) for group in by_kind.values()}
    for (_, tag), group in by_kind.items():
        if not tag.startswith("gpu-check"):
            continue
        newest_for: Dict[str, Path] = {}
        for path in sorted(group, key=rank):        # oldest first: a newer run of a test replaces it
            for test in _tests_of(path):
                newest_for[test] = path
        keep.update(newest_for.values())
    return sorted(keep, key=lambda p: p.name)
