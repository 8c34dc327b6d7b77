"""Write course notebooks with the standard header and slideshow metadata on every cell.

Use from a throwaway script (the committed .ipynb is the source of truth):

    import sys; sys.path.insert(0, "scripts"); from nbkit import *
    cells = header("03", "warps_simt", "Warps and SIMT") + [
        md("## A warp at work", "slide"), code("...", "-"), notes("speaker notes"),
    ]
    write("notebooks/03_warps_simt.ipynb", cells)

slide types: "slide", "subslide", "fragment", "-" (continue current slide), "skip", "notes".
"""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

#: THE one place naming the course's GitHub repository ("owner/name") and branch: the Colab badge and
#: the install cell of every notebook are written from these.  After changing them, rewrite the
#: headers of the committed notebooks with `python scripts/strip_notebooks.py --set-repo`
#: (tests/test_notebook_format.py fails on a notebook whose header names another repository).
COURSE_REPO = "cuda-on-the-metal/course"
COURSE_BRANCH = "main"
COLAB_BADGE_SVG = "https://colab.research.google.com/assets/colab-badge.svg"
_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}


def _meta(slide):
    if slide not in _TYPES:
        raise ValueError(f"slide type must be one of {sorted(_TYPES)}, got {slide!r}")
    return {"slideshow": {"slide_type": slide}}


def md(src, slide="slide"):
    return new_markdown_cell(src.strip("\n"), metadata=_meta(slide))


def code(src, slide="-", **extra_meta):
    meta = _meta(slide)
    meta.update(extra_meta)
    return new_code_cell(src.strip("\n"), metadata=meta)


#: The cell metadata key that holds speaker notes (gpu_viz.slides.SPEAKER_NOTES_KEY, which the deck
#: build reads; kept here too so the format checker needs no gpu_viz import).
SPEAKER_NOTES_KEY = "speaker_notes"


def notes(src):
    """Speaker notes for the slide so far.  A notes cell while a notebook is assembled; :func:`write`
    folds it into the metadata of the cell above (the learner's notebook shows no notes)."""
    return md(src, "notes")


def colab_url(filename, repo=None, branch=None):
    """The URL that opens notebooks/<filename> of the course repository in Colab."""
    return (f"https://colab.research.google.com/github/{repo or COURSE_REPO}/blob/{branch or COURSE_BRANCH}"
            f"/notebooks/{filename}")


def colab_badge(filename, repo=None, branch=None):
    """The markdown "Open in Colab" badge for notebooks/<filename>."""
    return f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(filename, repo, branch)})"


def install_spec(repo=None, branch=None):
    """The pip requirement the install cell uses: the package straight from the course repository."""
    return f"gpu-viz @ git+https://github.com/{repo or COURSE_REPO}@{branch or COURSE_BRANCH}"


def install_source(repo=None, branch=None):
    """The install cell: installs the package on Colab / a fresh kernel, does nothing where it is installed.

    Only the package itself is new on Colab: its base dependencies (numpy, matplotlib, ipywidgets,
    ipython) are already there in versions it accepts, and CuPy is preinstalled (cupy-cuda12x).
    """
    return (
        "# Colab or a fresh kernel: install the course package if it is missing.\n"
        "import importlib, importlib.util, subprocess, sys\n"
        "if importlib.util.find_spec(\"gpu_viz\") is None:\n"
        "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\",\n"
        f"                    \"{install_spec(repo, branch)}\"], check=True)\n"
        "    importlib.invalidate_caches()"
    )


#: The banner call of cell 2: a chapter showing the CPU model's traces, and one showing committed GPU
#: records in CPU mode (gpu_viz.banner's ``recorded``).
BANNER_CALLS = {False: "gpu_viz.banner()", True: "gpu_viz.banner(recorded=True)"}


def header(number, slug, title, intro="", recorded=False):
    """The three cells every notebook starts with: badge + title, install (skipped on slides), banner
    (``recorded``: a chapter that shows committed GPU records in CPU mode, gpu_viz.banner(recorded=True))."""
    filename = f"{number}_{slug}.ipynb"
    return [
        md(f"{colab_badge(filename)}\n\n# {title}\n\n{intro}".rstrip() + "\n", "slide"),
        code(install_source(), "skip"),
        code(f"import gpu_viz\n{BANNER_CALLS[recorded]};", "slide"),
    ]


def write(path, cells):
    from gpu_viz.slides import fold_speaker_notes

    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    fold_speaker_notes(nb)   # notes go to the cell above's metadata: the deck shows them, the notebook not
    nbformat.validate(nb)
    with open(path, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    return path
