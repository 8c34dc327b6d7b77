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
            if node.level - 1 >= len(base):   # `from ..x import y` in a top-level module: fails when run
                yield node.lineno, f"{'.' * node.level}{node.module or ''} (beyond the top-level package)", []
                continue
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
    assert not module.startswith("."), f"{path}:{line}: relative import {module}"
    assert importlib.util.find_spec(module) is not None, f"{path}:{line}: no module {module}"
    mod = importlib.import_module(module)
    for name in names:
        if hasattr(mod, name):
            continue
        assert hasattr(mod, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None, \
            f"{path}:{line}: {module} has no {name!r} (neither a name nor a submodule)"


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, AttributeError, ValueError):  # a parent that is a module, not a package
        return False


def _attributes(path: Path):
    """(line, modules, attribute) of every ``alias.attribute`` read in ``path`` where ``alias`` names
    a gpu_viz module it imported (``from gpu_viz.rmsnorm import bench`` ... ``bench.WIDE_SHAPES``),
    unless the file also assigns that name; an alias that names several modules (``m`` in one
    function, another ``m`` in the next) passes when one of them has the attribute."""
    tree = ast.parse(_source(path), str(path))
    aliases = {}
    for line, module, names in _imports(path):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.lineno == line:
                for a in node.names:
                    if a.name != "*" and _is_module(f"{module}.{a.name}"):
                        aliases.setdefault(a.asname or a.name, set()).add(f"{module}.{a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gpu_viz.") and a.asname:
                    aliases.setdefault(a.asname, set()).add(a.name)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    stored |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stored |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
               for a in [*n.args, *n.kwonlyargs, *n.posonlyargs]}
    seen = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.value.id not in stored):
            modules = tuple(sorted(aliases[node.value.id]))  # one alias for several modules, function by function
            if (modules, node.attr) not in seen:
                seen.add((modules, node.attr))
                yield node.lineno, modules, node.attr


ATTRS = [(p, line, mod, attr) for p in FILES for line, mod, attr in _attributes(p)]


def test_the_walk_finds_module_attributes():
    assert any("gpu_viz.measure.records" in c[2] and c[3] == "lesson_device" for c in ATTRS) and len(ATTRS) > 500


@pytest.mark.parametrize("path, line, modules, attr", ATTRS,
                         ids=[f"{c[0].relative_to(ROOT)}:{c[1]}:{c[3]}" for c in ATTRS])
def test_an_attribute_of_a_gpu_viz_module_exists(path, line, modules, attr):
    assert any(hasattr(importlib.import_module(m), attr) or _is_module(f"{m}.{attr}") for m in modules), \
        f"{path}:{line}: {' / '.join(modules)} has no {attr!r}"
