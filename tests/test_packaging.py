"""The build files: environment.yml in step with pyproject, the wheel carries the kernels and the newest
record of each kind, the two commands."""
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from gpu_viz.measure import record_names, records

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), 1)[0].lower().replace("_", "-")


def _pyproject_reqs():
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(proj["dependencies"])
    for extra in proj["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith("gpu-viz")]
    return {_name(r): r.replace(" ", "") for r in reqs}


def _environment_reqs():
    import yaml

    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    flat = []
    for d in deps:
        flat += d["pip"] if isinstance(d, dict) else [d]
    return {_name(r): r.replace(" ", "") for r in flat
            if not r.startswith("-e") and _name(r) not in ("python", "pip")}


def test_environment_yml_matches_pyproject():
    py, env = _pyproject_reqs(), _environment_reqs()
    assert set(py) == set(env), f"only in pyproject: {set(py) - set(env)}; only in environment.yml: {set(env) - set(py)}"
    differ = {k: (py[k], env[k]) for k in py if py[k] != env[k]}
    assert not differ, f"version specifiers differ (pyproject, environment.yml): {differ}"


def test_readme_commands_and_ci():
    readme = (ROOT / "README.md").read_text()
    assert "make slides" in readme and "make test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test\b", ci, re.M), ".ci/run must call the README's test command"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test:", makefile, re.M) and re.search(r"^slides:", makefile, re.M)


@pytest.mark.slow
def test_wheel_carries_the_kernels(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("gpu_viz-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    # every kernel source, in its folder (kernels/exercises/ too), + the launcher
    cu = sorted(p.relative_to(ROOT / "kernels").as_posix() for p in (ROOT / "kernels").rglob("*")
                if p.suffix in (".cu", ".cuh", ".cpp"))
    shipped = sorted(n[len("gpu_viz/_kernels/"):] for n in names if n.startswith("gpu_viz/_kernels/"))
    assert cu and shipped == cu, f"kernels in the wheel {shipped} != kernels/ {cu}"


@pytest.mark.slow
def test_an_installed_wheel_finds_its_records_notebooks_and_kernels(tmp_path):
    """pip install of the wheel (as Colab does): the records CPU mode shows, the notebooks
    `gpu-viz slides` builds and the kernels are found inside the package, not beside it."""
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "w"),
                          str(ROOT)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next((tmp_path / "w").glob("gpu_viz-*.whl"))
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                          str(site), str(wheel)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    probe = (
        "import json, gpu_viz\n"
        "from gpu_viz import data, kernels, slides\n"
        "from gpu_viz.measure import records\n"
        "print(json.dumps({'pkg': gpu_viz.__file__, 'checkout': str(data.CHECKOUT),\n"
        "  'records': sorted(r['_file'] for r in records.load_records()),\n"
        "  'notebooks': [p.name for p in slides.find_notebooks(slides.DEFAULT_NOTEBOOKS)],\n"
        "  'kernels': kernels.kernel_files(), 'templates': slides.TEMPLATES_DIR.is_dir(),\n"
        "  'out': str(slides.DEFAULT_OUT)}))\n")
    env = dict(__import__("os").environ, PYTHONPATH=str(site), GPU_VIZ_FORCE_CPU="1")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["pkg"].startswith(str(site)) and got["checkout"] == "None", got
    shipped = [p.name for p in record_names.newest_of_each_kind((ROOT / "benchmarks" / "results").glob("*.json"))]
    assert got["records"] == shipped, "the wheel must carry the newest committed record of each kind, no other"
    assert got["notebooks"] == sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert got["kernels"] == sorted(p.name for p in (ROOT / "kernels").glob("*.cu"))
    assert got["templates"] and got["out"] == "slides-build"


def _record(directory: Path, name: str, **fields) -> Path:
    path = directory / name
    path.write_text(json.dumps({"gpu": "NVIDIA H200", "rows": [], **fields}))
    return path


def test_the_newest_record_of_each_kind_is_chosen_by_date_then_sequence(tmp_path):
    """A kind is a GPU and a tag; within one, the later date wins, then the day's higher ``.N``
    (``.10`` after ``.9``), and a complete record wins over a newer one cut short."""
    names = ["nvidia-h200-2026-11-29-fused.json", "nvidia-h200-2026-12-01.9-fused.json",
             "nvidia-h200-2026-12-01.10-fused.json", "nvidia-h200-2026-12-02-quick-fused.json",
             "nvidia-h200-2026-12-01-hardware.json", "nvidia-l4-2026-11-30-hardware.json",
             "nvidia-h200-2026-12-01-gpu-check.json", "nvidia-h200-2026-12-03-gpu-check-notebooks.json",
             "nvidia-h200-2026-12-01.json", "nvidia-h200-2026-12-01.2.json"]
    paths = [_record(tmp_path, n) for n in names]
    paths.append(_record(tmp_path, "nvidia-h200-2026-12-04-fused.json", complete=False))
    (tmp_path / "notes.json").write_text("{}")
    paths.append(tmp_path / "notes.json")
    chosen = [p.name for p in record_names.newest_of_each_kind(paths)]
    assert chosen == sorted(["nvidia-h200-2026-12-01.10-fused.json", "nvidia-h200-2026-12-02-quick-fused.json",
                             "nvidia-h200-2026-12-01-hardware.json", "nvidia-l4-2026-11-30-hardware.json",
                             "nvidia-h200-2026-12-01-gpu-check.json",
                             "nvidia-h200-2026-12-03-gpu-check-notebooks.json", "nvidia-h200-2026-12-01.2.json"])
    assert record_names.kind("nvidia-h200-2026-12-03.3-fused.json") == ("nvidia-h200", "fused")
    assert record_names.sequence("nvidia-h200-2026-12-03.3-fused.json") == 3
    assert record_names.sequence("nvidia-h200-2026-12-03-fused.json") == 1 and record_names.kind("x.json") is None


def test_each_gpu_tests_newest_run_ships(tmp_path):
    """Bug class: a GPU test run of some tests (a partial gpu-check) is the newest of its kind, and
    shipping only it hid the newest outcome of every test it did not run."""
    import json

    def run(name, tests):
        p = tmp_path / name
        p.write_text(json.dumps({"pytest_gpu": {"passed": tests[:-1], "failed": [{"test": tests[-1]}]}}))
        return p

    old = run("nvidia-h200-2026-12-01-gpu-check.json", ["tests/a.py::t[1]", "tests/c.py::t"])
    mid = run("nvidia-h200-2026-12-02-gpu-check.json", ["tests/a.py::t[2]", "tests/b.py::t"])
    new = run("nvidia-h200-2026-12-03-gpu-check.json", ["tests/a.py::t[3]"])
    chosen = {p.name for p in record_names.newest_of_each_kind([old, mid, new])}
    assert chosen == {old.name, mid.name, new.name}
    gone = run("nvidia-h200-2026-11-30-gpu-check.json", ["tests/a.py::t", "tests/b.py::t"])
    assert gone.name not in {p.name for p in record_names.newest_of_each_kind([gone, old, mid, new])}


def test_the_wheel_ships_records_through_the_build_hook_only():
    """pyproject force-includes no records folder (that would ship every past run); the build hook
    (hatch_build.py) adds the newest of each kind."""
    hatch = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert not any("results" in src for src in hatch["force-include"]), hatch["force-include"]
    assert "custom" in hatch["hooks"]
    hook = (ROOT / "hatch_build.py").read_text()
    assert "newest_of_each_kind" in hook and '"benchmarks/results"' in hook


def test_the_shipped_records_answer_every_lookup_as_all_of_them_do(tmp_path):
    """What an installed package shows equals what the checkout shows: the newest record of each
    lesson record kind and of the bench, and the GPU test run each notebook and module cites
    (records.gpu_tests of every test id they name), found among the shipped records alone."""
    import shutil

    for path in record_names.newest_of_each_kind(RESULTS.glob("*.json")):
        shutil.copy(path, tmp_path / path.name)
    kinds = {k for ks in records.LESSON_RECORDS.values() for k in ks} | {"fused", "wide", "gpu-check*"}
    for k in sorted(kinds):
        full, shipped = records.newest(f"*-{k}.json", RESULTS), records.newest(f"*-{k}.json", tmp_path)
        assert (full and full["_file"]) == (shipped and shipped["_file"]), k
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "gpu_viz").rglob("*.py")]
    sources += [p.read_text(encoding="utf-8") for p in (ROOT / "notebooks").glob("*.ipynb")]
    cited = {m for s in sources for m in re.findall(r"(test_\w+\.py::[\w\[\]\-]*)", s)}
    assert len(cited) >= 5, cited
    for test in sorted(cited):
        assert records.gpu_tests("tests/" + test, RESULTS) == records.gpu_tests("tests/" + test, tmp_path), test
