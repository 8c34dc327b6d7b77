"""History lives in benchmarks/NOTES.md and benchmarks/README.md, never in the product: no work-item
or session numbers, dated runs or dated exploration folders in gpu_viz/, kernels/, tests/, scripts/
or the README (dates as data -- a record's file name, a fixture's ``"date"`` -- are fine).

This file's own examples of what the patterns find are the one exception."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TREES = ("gpu_viz", "kernels", "tests", "scripts")
SUFFIXES = {".py", ".cu", ".cuh", ".cpp", ".h", ".md", ".txt", ".toml", ".sh", ""}
DATE = r"20\d\d-[01]\d-[0-3]\d"
#: (what it is, pattern): each finds a diary reference, not a datum.
DIARY = (
    ("a session number", re.compile(r"\b[Ss]essi[o]n ?\d+")),
    ("an ordinal session", re.compile(r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) sessi[o]n\b", re.I)),
    ("an issue number", re.compile(r"\b[Ii]ssu[e] ?#?\d+")),
    ("a work-item number", re.compile(r"\b(?:[Ii]te[m]|[Ww]ork ite[m]) ?\d+\b")),
    ("a dated exploration folder", re.compile(r"explor[e]/" + DATE)),
    ("a dated run", re.compile(r"\b(?:runs?|records?|builds?|measurements?|sessions?)(?:'s)? o[f] " + DATE)),
    ("a date in prose", re.compile(r"\b(?:on|since|until|before|after) " + DATE + r"\b(?!-)")),
    ("a date's possessive", re.compile(DATE + r"(?:\.\d+)?'s\b")),
    ("a commit as history", re.compile(r"\bas o[f] commit\b")),
)


def product_files():
    yield ROOT / "README.md"
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts \
                    and "_results" not in path.parts and path != Path(__file__).resolve():
                yield path


def diary_lines(text: str):
    """(line number, what it is, the line) for each diary reference in ``text``."""
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in DIARY:
            if pattern.search(line):
                yield number, what, line.strip()


def test_no_diary_references_in_the_product():
    found = []
    for path in product_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(ROOT)}:{n}: {what}: {line}" for n, what, line in diary_lines(text)]
    assert not found, "history belongs in benchmarks/NOTES.md:\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    "# the wide run of 2026-12-01, 30 replays", "see benchmarks/explore/2026-12-03-session14-gpu/",
    "(item 3 of issue 18)", "Issue 17's rule", "the third session's build", "measured on 2026-12-01's build",
    "as of commit 97af12e"])
def test_the_patterns_find_a_diary_reference(line):
    assert list(diary_lines(line)), line


@pytest.mark.parametrize("line", [
    '{"date": "2026-11-29", "gpu": "NVIDIA H200"}', "recorded on NVIDIA H200, 2026-11-29 (not live)",
    "Source: the record nvidia-h200-2026-12-03-wide-policy.json", "the test session's Chromium",
    "an item of the list", "for item in items:"])
def test_the_patterns_leave_data_alone(line):
    assert not list(diary_lines(line)), line
