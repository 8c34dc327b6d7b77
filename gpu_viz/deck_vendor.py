"""The decks' JavaScript, vendored: reveal.js, require.js, jQuery, MathJax 2 and the
``@jupyter-widgets/html-manager`` embedder copied into ``<out>/vendor/`` (from ``slides/node_modules``,
``npm ci`` against the pinned ``slides/package-lock.json``, an already-vendored folder, or
``--vendor-from DIR``), so no deck makes a request that leaves the page.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from .data import course_dir

SLIDES_DIR = course_dir("slides", "_slides")

#: What each deck loads, relative to the deck (decks sit beside vendor/).
VENDOR_URLS = {
    "reveal_url_prefix": "vendor/reveal.js",
    "require_js_url": "vendor/requirejs/require.js",
    "jquery_url": "vendor/jquery/jquery.min.js",
    "mathjax_url": "vendor/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
    "widget_renderer_url": "vendor/html-manager/embed-amd.js",
}

#: npm package -> (destination under vendor/, files/folders to copy from the package).
#: Only what the decks load: MathJax 2 is pruned to the TeX -> CommonHTML path.
VENDOR_FILES = {
    "reveal.js": ("reveal.js", ["dist/reveal.js", "dist/reveal.css", "dist/reset.css", "dist/theme",
                                "plugin/notes/notes.js", "LICENSE"]),
    "requirejs": ("requirejs", ["require.js"]),
    "jquery": ("jquery", ["dist/jquery.min.js", "LICENSE.txt"]),
    "mathjax": ("mathjax", ["MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js", "extensions",
                            "jax/input/TeX", "jax/output/CommonHTML", "jax/output/PreviewHTML",
                            "jax/element", "fonts/HTML-CSS/TeX/woff", "localization/en", "LICENSE"]),
    "@jupyter-widgets/html-manager": ("html-manager", ["dist/embed-amd.js", "dist/*.woff", "dist/*.woff2",
                                                       "dist/*.ttf", "dist/*.eot", "dist/*.svg"]),
}
#: The files whose presence means a vendor/ folder is complete (checked before reuse).
VENDOR_REQUIRED = [
    "reveal.js/dist/reveal.js", "reveal.js/plugin/notes/notes.js", "reveal.js/dist/theme/white.css",
    "requirejs/require.js", "jquery/jquery.min.js", "mathjax/MathJax.js",
    "mathjax/config/TeX-AMS_CHTML-full.js", "html-manager/embed-amd.js",
]
VENDOR_STAMP = "VENDORED.json"

class SlidesError(RuntimeError):
    """A slide build step failed; the message says which and what to do."""


def vendor_complete(vendor_dir: Path) -> bool:
    """True when ``vendor_dir`` holds every file a deck loads (see ``VENDOR_REQUIRED``)."""
    vendor_dir = Path(vendor_dir)
    return all((vendor_dir / rel).is_file() for rel in VENDOR_REQUIRED)


def _stamp_matches(vendor_dir: Path, slides_dir: Path) -> bool:
    """True when ``vendor_dir`` was vendored from the versions ``slides_dir/package.json`` pins."""
    try:
        stamp = json.loads((vendor_dir / VENDOR_STAMP).read_text())["packages"]
        pins = json.loads((slides_dir / "package.json").read_text())["dependencies"]
    except (OSError, ValueError, KeyError):
        return False
    return stamp == pins


def _npm_ci(slides_dir: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SlidesError(
            "the decks' JavaScript is not vendored yet and npm is not installed. Either install Node.js/npm "
            "(then `gpu-viz slides` runs `npm ci` in slides/), or pass --vendor-from DIR with a vendor/ "
            "folder built elsewhere (e.g. slides/build/vendor copied from a machine that has npm).")
    if not (slides_dir / "package-lock.json").is_file():
        raise SlidesError(f"{slides_dir}/package-lock.json is missing; it pins the vendored npm packages")
    print(f"[slides] npm ci in {slides_dir} (pinned by package-lock.json)", flush=True)
    proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=slides_dir,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SlidesError(f"`npm ci` failed in {slides_dir} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def _copy_package(node_modules: Path, package: str, vendor_dir: Path) -> None:
    dest_name, items = VENDOR_FILES[package]
    src_root = node_modules / package
    if not src_root.is_dir():
        raise SlidesError(f"npm package {package!r} is missing from {node_modules}; run `npm ci` in slides/")
    for item in items:
        matches = sorted(src_root.glob(item)) if any(c in item for c in "*?[") else [src_root / item]
        for src in matches:
            if not src.exists():
                if item == "LICENSE" or item.endswith(".txt"):
                    continue
                raise SlidesError(f"{src} is missing from npm package {package!r}; the pinned version changed?")
            # dist/x.js -> <dest>/x.js for jquery and html-manager (flat), keep layout for the others
            rel = src.relative_to(src_root)
            if dest_name in ("jquery", "html-manager") and rel.parts[0] == "dist":
                rel = Path(*rel.parts[1:])
            dst = vendor_dir / dest_name / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.map", "*.esm.js", "unpacked"))
            else:
                shutil.copy2(src, dst)


def vendor(vendor_dir: Path, vendor_from: Optional[Path] = None, slides_dir: Path = SLIDES_DIR,
           refresh: bool = False) -> str:
    """Make ``vendor_dir`` hold every script the decks load; return how ("kept", "copied", "npm").

    Order: copy ``vendor_from`` when given (a complete vendor folder); else keep a complete
    ``vendor_dir`` (unless ``refresh``); else copy from ``slides_dir/node_modules``; else copy the
    already-vendored ``slides_dir/build/vendor`` (e.g. carried to a machine with no npm); else run
    ``npm ci`` (pinned by ``slides_dir/package-lock.json``) and copy from node_modules.

    Raises:
        SlidesError: ``vendor_from`` incomplete, or no node_modules and no npm (the message says
            what to do).
    """
    vendor_dir = Path(vendor_dir)
    if vendor_from is not None:
        vendor_from = Path(vendor_from)
        if not vendor_complete(vendor_from):
            missing = [r for r in VENDOR_REQUIRED if not (vendor_from / r).is_file()]
            raise SlidesError(f"--vendor-from {vendor_from}: not a complete vendor folder, missing {missing}")
        if vendor_from.resolve() != vendor_dir.resolve():
            if vendor_dir.exists():
                shutil.rmtree(vendor_dir)
            shutil.copytree(vendor_from, vendor_dir)
        return "copied"
    if not refresh and vendor_complete(vendor_dir):
        return "kept"
    node_modules = slides_dir / "node_modules"
    how = "copied"
    have_modules = all((node_modules / p).is_dir() for p in VENDOR_FILES)
    carried = slides_dir / "build" / "vendor"
    if (not have_modules and vendor_complete(carried) and _stamp_matches(carried, slides_dir)
            and carried.resolve() != vendor_dir.resolve()):
        if vendor_dir.exists():
            shutil.rmtree(vendor_dir)
        shutil.copytree(carried, vendor_dir)
        return "copied"
    if not have_modules:
        _npm_ci(slides_dir)
        how = "npm"
    if vendor_dir.exists():
        shutil.rmtree(vendor_dir)
    vendor_dir.mkdir(parents=True)
    versions = {}
    for package in VENDOR_FILES:
        _copy_package(node_modules, package, vendor_dir)
        meta = json.loads((node_modules / package / "package.json").read_text())
        versions[package] = meta.get("version")
    (vendor_dir / VENDOR_STAMP).write_text(json.dumps({"packages": versions}, indent=1) + "\n")
    return how
