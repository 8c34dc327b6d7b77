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

#: Where the course repository lives (Colab badges and the install cell read it).
COURSE_REPO = "cuda-on-the-metal/course"
COURSE_BRANCH = "main"
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


def notes(src):
    return md(src, "notes")


def colab_url(filename):
    return f"https://colab.research.google.com/github/{COURSE_REPO}/blob/{COURSE_BRANCH}/notebooks/{filename}"


def header(number, slug, title, intro=""):
    """The three cells every notebook starts with: badge + title, install (skipped on slides), banner."""
    filename = f"{number}_{slug}.ipynb"
    badge = (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
             f"({colab_url(filename)})")
    return [
        md(f"{badge}\n\n# {title}\n\n{intro}".rstrip() + "\n", "slide"),
        code(
            "# Colab or a fresh kernel: install the course package if it is missing.\n"
            "import importlib.util, subprocess, sys\n"
            "if importlib.util.find_spec(\"gpu_viz\") is None:\n"
            f"    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\",\n"
            f"                    \"gpu-viz @ git+https://github.com/{COURSE_REPO}@{COURSE_BRANCH}\"], check=True)",
            "skip"),
        code("import gpu_viz\ngpu_viz.banner();", "slide"),
    ]


def write(path, cells):
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(nb)
    with open(path, "w") as f:
        nbformat.write(nb, f)
    return path
