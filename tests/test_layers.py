"""The package's layers, read from its own imports (module level and inside functions alike):
``measure/`` is infrastructure and imports nothing of the lessons; the fused ops' layers import
only the layers below them; and no modules import each other in a circle."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Set

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gpu_viz"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, name: str) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level:
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([name] if name else []))
    return name


def _known(name: str, modules: Set[str]) -> str:
    """The longest prefix of ``name`` that is a module of the package ("gpu_viz.a.b.C" -> "gpu_viz.a.b")."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts)


def import_graph() -> Dict[str, Set[str]]:
    """module -> the package's modules it imports (``from . import x`` counts x when x is a module)."""
    files = {(_module_name(p), p) for p in PACKAGE.rglob("*.py")}
    modules = {m for m, _ in files}
    graph: Dict[str, Set[str]] = {}
    for module, path in files:
        is_package = path.name == "__init__.py"
        out = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):  # a submodule where the name is one, else the module itself
                base = _resolve(module, is_package, node.level, node.module or "")
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for n in names:
                k = _known(n, modules)
                if k and k != module and k != "gpu_viz":
                    out.add(k)
        graph[module] = out
    return graph


def _cycles(graph: Dict[str, Set[str]]):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_reads_every_kind_of_import():
    """The reader itself: module-level, function-level, relative and absolute imports count."""
    g = import_graph()
    assert "gpu_viz.measure.records" in g["gpu_viz.measure.memory"] or "gpu_viz.measure.timing" in g["gpu_viz.measure.memory"]
    assert "gpu_viz.rmsnorm.fused.launch" in g["gpu_viz.rmsnorm.fused.op"]
    assert "gpu_viz.measure.records" in g["gpu_viz.disasm"]  # an import inside a function


#: What measure/ may import: the package's foundations (no lesson, op, producer or exercise).
MEASURE_MAY_IMPORT = {"gpu_viz.backend", "gpu_viz.check", "gpu_viz.data", "gpu_viz.device", "gpu_viz.kernels",
                      "gpu_viz.occupancy", "gpu_viz.words", "gpu_viz.arrays"}


def test_measure_imports_nothing_above_it():
    g = import_graph()
    above = {m: sorted(d for d in deps if not d.startswith("gpu_viz.measure") and d not in MEASURE_MAY_IMPORT)
             for m, deps in g.items() if m.startswith("gpu_viz.measure")}
    assert not any(above.values()), {m: d for m, d in above.items() if d}


#: The fused ops' layers, bottom up: each imports only layers before it.
FUSED_LAYERS = ("names", "config", "checks", "launch", "autograd", "op")


def test_the_fused_layers_import_only_downwards():
    g = import_graph()
    for i, layer in enumerate(FUSED_LAYERS):
        deps = {d.rsplit(".", 1)[1] for d in g[f"gpu_viz.rmsnorm.fused.{layer}"] if d.startswith("gpu_viz.rmsnorm.fused.")}
        assert deps <= set(FUSED_LAYERS[:i]), (layer, sorted(deps - set(FUSED_LAYERS[:i])))
    # the C++ launcher's module builds and loads; it imports none of the layers above it
    assert not any(d.startswith("gpu_viz.rmsnorm.fused") for d in g["gpu_viz.rmsnorm.launcher"])


@pytest.mark.parametrize("graph_of", ["package"])
def test_no_import_circle(graph_of):
    """No modules import each other in a circle (the exercises' registry finds its notebook modules
    by listing the package, so it imports none of them)."""
    assert _cycles(import_graph()) == []


def test_a_circle_is_found_where_there_is_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
