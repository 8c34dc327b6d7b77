"""Hatch build hook: the wheel carries the newest committed record of each kind.

``benchmarks/results/`` keeps every GPU run (their history is benchmarks/NOTES.md's); an installed
package (Colab) shows only the newest of each kind, so the wheel ships those alone, as
``gpu_viz/_results/<name>``.  Which ones: :func:`gpu_viz.measure.record_names.newest_of_each_kind`,
loaded by path (the package itself is not importable while it is being built).  Editable installs
read ``benchmarks/results/`` in place and need nothing here.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

RESULTS = "benchmarks/results"
SHIPPED_AS = "gpu_viz/_results"


def record_names(root: Path):
    """gpu_viz/measure/record_names.py of the tree at ``root``, as a module."""
    spec = importlib.util.spec_from_file_location("_record_names", root / "gpu_viz" / "measure" / "record_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        for path in record_names(root).newest_of_each_kind((root / RESULTS).glob("*.json")):
            build_data["force_include"][str(path)] = f"{SHIPPED_AS}/{path.name}"
