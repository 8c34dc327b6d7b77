"""The decks' JavaScript, vendored from npm so every deck runs offline: reveal.js, require.js,
jQuery, MathJax 2 and the widget manager, copied into ``<out>/vendor/`` (pinned by
``slides/package-lock.json``; stamped with the packages' versions in ``VENDORED.json``).

Only files the build wrote are replaced or removed (:class:`gpu_viz.outdir.OwnedFolder`).
"""
from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from .data import course_dir
from .outdir import OwnedFolder

SLIDES_DIR = course_dir("slides", "_slides")
#: The course notebooks a build executes, and the metadata key its executed copies carry.
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
BUILD_METADATA_KEY = "gpu_viz_build"

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


# ----------------------------------------------------------------------------- vendoring
def vendor_complete(vendor_dir: Path) -> bool:
    """True when ``vendor_dir`` holds every file a deck loads (see ``VENDOR_REQUIRED``)."""
    vendor_dir = Path(vendor_dir)
    return all((vendor_dir / rel).is_file() for rel in VENDOR_REQUIRED)


def _stamp_matches(vendor_dir: Path, slides_dir: Path) -> bool:
    """True when ``vendor_dir`` was vendored from the versions ``slides_dir/package.json`` pins."""
    try:
        stamp = json.loads((vendor_dir / VENDOR_STAMP).read_text(encoding="utf-8"))["packages"]
        pins = json.loads((slides_dir / "package.json").read_text(encoding="utf-8"))["dependencies"]
    except (OSError, ValueError, KeyError, TypeError):
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
                          capture_output=True, text=True, encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise SlidesError(f"`npm ci` failed in {slides_dir} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


#: What the vendored copy of a package leaves out of a folder it copies (source maps, ES modules
#: the decks do not load, unpacked sources).
_VENDOR_SKIP = ("*.map", "*.esm.js", "unpacked")


def _package_files(node_modules: Path, package: str) -> List[Tuple[Path, str]]:
    """``(source file, path under vendor/)`` of what the decks load from one npm package."""
    dest_name, items = VENDOR_FILES[package]
    src_root = node_modules / package
    if not src_root.is_dir():
        raise SlidesError(f"npm package {package!r} is missing from {node_modules}; run `npm ci` in slides/")
    pairs = []
    for item in items:
        matches = sorted(src_root.glob(item)) if any(c in item for c in "*?[") else [src_root / item]
        for src in matches:
            if not src.exists():
                if item == "LICENSE" or item.endswith(".txt"):
                    continue
                raise SlidesError(f"{src} is missing from npm package {package!r}; the pinned version changed?")
            files = [src] if src.is_file() else sorted(
                p for p in src.rglob("*") if p.is_file()
                and not any(fnmatch.fnmatch(part, pat) for part in p.relative_to(src).parts for pat in _VENDOR_SKIP))
            for f in files:
                # dist/x.js -> <dest>/x.js for jquery and html-manager (flat), keep layout for the others
                rel = f.relative_to(src_root)
                if dest_name in ("jquery", "html-manager") and rel.parts[0] == "dist":
                    rel = Path(*rel.parts[1:])
                pairs.append((f, f"{dest_name}/{rel.as_posix()}"))
    return pairs


def _tree_files(root: Path) -> List[Tuple[Path, str]]:
    """``(file, path under root)`` of every file under ``root``."""
    return [(p, p.relative_to(root).as_posix()) for p in sorted(Path(root).rglob("*")) if p.is_file()]


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it (links resolved)."""
    path, folder = Path(path).resolve(), Path(folder).resolve()
    return path == folder or folder in path.parents


def _put_vendor(folder: OwnedFolder, prefix: str, pairs: Sequence[Tuple[Path, str]],
                extra: Sequence[Tuple[str, bytes]] = ()) -> None:
    """Make ``<folder>/<prefix>`` hold exactly ``pairs`` (copied) and ``extra`` (written): files of
    ours that are not among them are removed; a file the build did not write is never touched."""
    keep = {f"{prefix}/{rel}" for _src, rel in pairs} | {f"{prefix}/{rel}" for rel, _data in extra}
    folder.copy_files((src, f"{prefix}/{rel}") for src, rel in pairs)
    if extra:
        folder.write_many([(f"{prefix}/{rel}", data) for rel, data in extra])
    for rel in folder.owned(prefix):
        if rel not in keep:
            folder.remove(rel)


def vendor(vendor_dir: Path, vendor_from: Optional[Path] = None, slides_dir: Path = SLIDES_DIR,
           refresh: bool = False, *, folder: Optional[OwnedFolder] = None, force: bool = False) -> str:
    """Make ``vendor_dir`` hold every script the decks load; return how ("kept", "copied", "npm").

    Order: copy ``vendor_from`` when given (a complete vendor folder); else keep a complete
    ``vendor_dir`` (unless ``refresh``); else copy from ``slides_dir/node_modules``; else copy the
    already-vendored ``slides_dir/build/vendor`` (e.g. carried to a machine with no npm); else run
    ``npm ci`` (pinned by ``slides_dir/package-lock.json``) and copy from node_modules.

    ``vendor_dir`` lies in an output folder the build owns (``folder``, else its parent is claimed,
    see :class:`gpu_viz.outdir.OwnedFolder`; ``force`` as there): only files of ours are replaced
    or removed, each file whole.

    Raises:
        SlidesError: ``vendor_from`` incomplete or inside ``vendor_dir`` (it would be replaced by
            its own copy), or no node_modules and no npm (the message says what to do).
        FolderError: the output folder holds files the build did not write (see OwnedFolder).
    """
    vendor_dir = Path(vendor_dir)
    if vendor_from is not None:
        vendor_from = Path(vendor_from)
        if _inside(vendor_from, vendor_dir) and vendor_from.resolve() != vendor_dir.resolve():
            raise SlidesError(f"--vendor-from {vendor_from} is inside the output's vendor folder {vendor_dir}, which "
                              "the build replaces: copy it somewhere else first and pass that")
        if not vendor_complete(vendor_from):
            missing = [r for r in VENDOR_REQUIRED if not (vendor_from / r).is_file()]
            raise SlidesError(f"--vendor-from {vendor_from}: not a complete vendor folder, missing {missing}")
    if folder is None:
        with OwnedFolder(vendor_dir.parent, "--out", force=force, adopt=_earlier_build) as owned:
            return vendor(vendor_dir, vendor_from, slides_dir, refresh, folder=owned)
    prefix = vendor_dir.resolve().relative_to(folder.root.resolve()).as_posix()
    if vendor_from is not None:
        if vendor_from.resolve() == vendor_dir.resolve():
            return "kept"
        _put_vendor(folder, prefix, _tree_files(vendor_from))
        return "copied"
    if not refresh and vendor_complete(vendor_dir):
        return "kept"
    node_modules = slides_dir / "node_modules"
    how = "copied"
    have_modules = all((node_modules / p).is_dir() for p in VENDOR_FILES)
    carried = slides_dir / "build" / "vendor"
    if (not have_modules and vendor_complete(carried) and _stamp_matches(carried, slides_dir)
            and carried.resolve() != vendor_dir.resolve()):
        _put_vendor(folder, prefix, _tree_files(carried))
        return "copied"
    if not have_modules:
        _npm_ci(slides_dir)
        how = "npm"
    pairs, versions = [], {}
    for package in VENDOR_FILES:
        pairs += _package_files(node_modules, package)
        meta = json.loads((node_modules / package / "package.json").read_text(encoding="utf-8"))
        versions[package] = meta.get("version")
    stamp = (json.dumps({"packages": versions}, indent=1) + "\n").encode("utf-8")
    _put_vendor(folder, prefix, pairs, extra=[(VENDOR_STAMP, stamp)])
    return how


def _earlier_executed(root: Path) -> set:
    """The executed copies an earlier build wrote in ``root`` (they carry its metadata), by name."""
    found = set()
    for p in Path(root).glob(NOTEBOOK_GLOB):
        try:
            if f'"{BUILD_METADATA_KEY}"' in p.read_text(encoding="utf-8"):
                found.add(p.name)
        except (OSError, UnicodeDecodeError):
            continue
    return found


def _earlier_build(root: Path) -> set:
    """The files of a ``gpu-viz slides`` build that predates the ledger (:mod:`gpu_viz.outdir`),
    taken as the build's own: with a ``manifest.json`` listing decks, its index, manifest, decks,
    PDFs and executed copies; a ``vendor/`` stamped with the pinned packages' names (VENDORED.json)."""
    root = Path(root)
    found = set()
    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        built = isinstance(manifest, dict) and isinstance(manifest.get("decks"), list)
    except (OSError, ValueError):
        built = False
    if built:
        found |= {"index.html", "manifest.json"}
        found |= {p.name for pattern in ("[0-9][0-9]_*.slides.html", "[0-9][0-9]_*.pdf") for p in root.glob(pattern)}
        found |= {f"executed/{name}" for name in _earlier_executed(root / "executed")}
    try:
        stamp = json.loads((root / "vendor" / VENDOR_STAMP).read_text(encoding="utf-8"))
        stamped = set(stamp["packages"]) == set(VENDOR_FILES)
    except (OSError, ValueError, KeyError, TypeError):
        stamped = False
    if stamped:
        found |= {f"vendor/{rel}" for _p, rel in _tree_files(root / "vendor")}
    return found
