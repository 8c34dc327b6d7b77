"""Every ``from gpu_viz... import name`` in the package, the scripts, the tests and the notebooks resolves, those
inside functions included: a GPU-only path (``if live(): from ..x import y``) is never run on a
machine without a GPU, so a module moved from under it would otherwise surface first on a
learner's GPU."""
import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*(ROOT / "gpu_viz").rglob("*.py"), *(ROOT / "tests").glob("*.py"), *(ROOT / "scripts").rglob("*.py"),
                *[p for p in (ROOT / "scripts").iterdir() if p.is_file() and not p.suffix
                  and p.read_text(errors="replace").startswith("#!/usr/bin/env python")],
                *(ROOT / "notebooks").glob("*.ipynb")])


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source(path: Path) -> str:
    """A file's Python: a notebook's code cells joined (IPython's ``%`` and ``!`` lines left out)."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    import json

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(ln for ln in (c["source"] if isinstance(c["source"], list) else c["source"].splitlines(True))
                              if not ln.lstrip().startswith(("%", "!")))
                      for c in cells if c["cell_type"] == "code")


def _imports(path: Path):
    """(line, module, names) of every ImportFrom of gpu_viz in ``path``, at any depth, less those in a
    ``try`` that catches ImportError (a fallback for another layout, as scripts/sass_diff.py has)."""
    tree = ast.parse(_source(path), str(path))
    here = _module_of(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    guarded = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
               and any(h.type is not None and "ImportError" in ast.unparse(h.type) for h in t.handlers)
               for stmt in [*t.body, *t.handlers] for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or id(node) in guarded:  # an import with a fallback
            continue
        if node.level:
            if not here.startswith("gpu_viz"):
                continue
            base = package.split(".")
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        if module == "gpu_viz" or module.startswith("gpu_viz."):
            yield node.lineno, module, [a.name for a in node.names if a.name != "*"]


CASES = [(p, line, mod, names) for p in FILES for line, mod, names in _imports(p)]


def test_the_walk_finds_lazy_imports():
    lazy = [c for c in CASES if c[0].name == "lessons.py" and c[2] == "gpu_viz" and "emulator" in c[3]]
    assert lazy and len(CASES) > 500, len(CASES)


@pytest.mark.parametrize("path, line, module, names", CASES,
                         ids=[f"{c[0].relative_to(ROOT)}:{c[1]}" for c in CASES])
def test_an_import_of_gpu_viz_resolves(path, line, module, names):
    assert importlib.util.find_spec(module) is not None, f"{path}:{line}: no module {module}"
    mod = importlib.import_module(module)
    for name in names:
        if hasattr(mod, name):
            continue
        assert hasattr(mod, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None, \
            f"{path}:{line}: {module} has no {name!r} (neither a name nor a submodule)"
