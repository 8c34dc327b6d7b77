"""The test plumbing itself (tests/conftest_infra.py, the Makefile's nvcc, scripts/gpu-check's split):
replayable seeds, a failing test's replay command, nvcc from PyPI on PATH, CI failing a build check
that found no nvcc, and the timing tests kept apart from the sanitizer.

The hook tests run a small pytest session in-process (pytester) with this directory's hooks
loaded; they disable Hypothesis's plugin there, since it keeps its seed in a module global that
the outer session shares.
"""
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import conftest_infra as infra

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

INNER_CONFTEST = """
from conftest_infra import (pytest_configure, pytest_report_header, pytest_runtest_makereport,
                            pytest_terminal_summary, rng, seed)
"""

SEED_TESTS = """
import json, os, pytest

def _record(name, seed, rng):
    with open(os.environ["SEED_LOG"], "a") as f:
        f.write(json.dumps([name, seed, [float(v) for v in rng.random(3)]]) + "\\n")

def test_a(seed, rng):
    _record("a", seed, rng)

@pytest.mark.parametrize("n", [1, 7])
def test_b(seed, rng, n):
    _record(f"b{n}", seed, rng)
"""


@pytest.fixture
def inner(pytester, monkeypatch):
    """A pytester dir with conftest_infra's hooks; ``run(*args, seed=None)`` runs pytest there."""
    pytester.makeconftest(INNER_CONFTEST)
    log = pytester.path / "seeds.jsonl"
    monkeypatch.setenv("SEED_LOG", str(log))
    for var in ("GPU_VIZ_SEED", "CI"):
        monkeypatch.delenv(var, raising=False)

    def run(*args, seed=None):
        if seed is None:
            monkeypatch.delenv("GPU_VIZ_SEED", raising=False)
        else:
            monkeypatch.setenv("GPU_VIZ_SEED", str(seed))
        log.unlink(missing_ok=True)
        result = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)
        result.seeds = {}
        if log.is_file():
            import json

            for line in log.read_text().splitlines():
                name, s, values = json.loads(line)
                result.seeds[name] = (s, values)
        return result

    return run


# ----------------------------------------------------------------------------------- seeds

def test_header_names_the_run_seed_and_the_replay(pytester, inner):
    pytester.makepyfile(test_x=SEED_TESTS)
    result = inner(seed=123456)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["gpu_viz run seed: 123456 (replay: GPU_VIZ_SEED=123456)"])
    assert result.stdout.lines.index("gpu_viz run seed: 123456 (replay: GPU_VIZ_SEED=123456)") < \
        next(i for i, ln in enumerate(result.stdout.lines) if ln.startswith("collected"))


def test_same_run_seed_same_test_seeds_and_data(pytester, inner):
    pytester.makepyfile(test_x=SEED_TESTS)
    first, second = inner(seed=77).seeds, inner(seed=77).seeds
    assert set(first) == {"a", "b1", "b7"} and first == second
    assert len({s for s, _ in first.values()}) == 3, first  # each test its own seed
    assert first["a"][0] == infra.seed_for(77, "test_x.py::test_a")
    # a test's seed does not depend on which other tests run, nor on their order
    alone = inner("test_x.py::test_b[7]", seed=77).seeds
    assert alone == {"b7": first["b7"]}
    assert inner("-k", "b", seed=78).seeds["b7"] != first["b7"]


def test_fresh_run_seed_without_the_variable(pytester, inner):
    pytester.makepyfile(test_x=SEED_TESTS)
    runs = [inner() for _ in range(2)]
    heads = [next(ln for ln in r.stdout.lines if ln.startswith("gpu_viz run seed:")) for r in runs]
    assert heads[0] != heads[1], heads
    run_seed = int(re.search(r"seed: (\d+)", heads[0]).group(1))
    # the printed seed is the one the tests got theirs from
    assert runs[0].seeds["a"][0] == infra.seed_for(run_seed, "test_x.py::test_a")


@pytest.mark.parametrize("bad", ["abc", "-3", "1.5"])
def test_bad_seed_is_a_usage_error(pytester, inner, bad):
    pytester.makepyfile(test_x=SEED_TESTS)
    result = inner(seed=bad)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "GPU_VIZ_SEED must be a non-negative integer" in result.stderr.str()


FAILING = """
import pytest

@pytest.mark.parametrize("shape", [(3, 8200)], ids=["odd shape"])
def test_mismatch(rng, shape):
    x = rng.random(shape)
    print("first", float(x.flat[0]))
    assert x.sum() < 0, "a mismatch"

def test_passes(rng):
    pass
"""


def test_failing_report_shows_seed_and_replay_command(pytester, inner):
    pytester.makepyfile(test_f=FAILING)
    result = inner(seed=4242)
    result.assert_outcomes(failed=1, passed=1)
    nodeid = "test_f.py::test_mismatch[odd shape]"
    text = result.stdout.str()
    assert "gpu_viz seed" in text
    assert f"test seed {infra.seed_for(4242, nodeid)} (run seed 4242)" in text
    replay = f"GPU_VIZ_SEED=4242 python -m pytest {shlex.quote(nodeid)}"
    assert f"replay: {replay}" in text
    assert text.count("test seed ") == 1  # the passing test's report has no seed section
    first = re.search(r"first (\S+)", text).group(1)
    # the printed command, run as printed, fails on the same data
    args = shlex.split(replay)[4:]  # after `GPU_VIZ_SEED=N python -m pytest`
    again = inner(*args, seed=4242)
    again.assert_outcomes(failed=1)
    assert re.search(r"first (\S+)", again.stdout.str()).group(1) == first


def test_quiet_run_names_its_seed_at_the_end(pytester, inner):
    pytester.makepyfile(test_x=SEED_TESTS)
    result = inner("-q", seed=99)
    assert "gpu_viz run seed: 99 (replay: GPU_VIZ_SEED=99)" in result.stdout.lines


def test_hypothesis_is_seeded_with_the_run_seed(pytester):
    """Hypothesis draws the same examples for the same run seed (a subprocess: its seed is global).
    Outside CI only: under CI=true Hypothesis's "ci" profile draws the same examples whatever the seed."""
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_h="""
        import os
        from hypothesis import given, settings, strategies as st

        @settings(max_examples=5, database=None)
        @given(st.integers(0, 10**9))
        def test_draws(n):
            with open(os.environ["SEED_LOG"], "a") as f:
                f.write(f"{n}\\n")
    """)
    log = pytester.path / "draws.txt"

    def draws(seed):
        log.unlink(missing_ok=True)
        env = {"SEED_LOG": str(log), "GPU_VIZ_SEED": str(seed),
               "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
        base = {k: v for k, v in os.environ.items() if k != "CI"}
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_h.py"],
                              cwd=pytester.path, env={**base, **env}, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return log.read_text().split()

    assert draws(5) == draws(5) != draws(6)


# ------------------------------------------------------------------------------------ nvcc

def _fake_nvcc(root: Path, pkg="cu13") -> Path:
    exe = root / "nvidia" / pkg / "bin" / "nvcc"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\necho fake nvcc\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


@pytest.mark.parametrize("pkg", ["cu13", "cuda_nvcc"])  # nvidia-cuda-nvcc, nvidia-cuda-nvcc-cu12
def test_wheel_nvcc_goes_on_path_when_none_is_there(tmp_path, monkeypatch, pkg):
    exe = _fake_nvcc(tmp_path / "site", pkg)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site"), *sys.path])
    env = {"PATH": str(tmp_path / "empty")}
    assert infra.provide_nvcc(env) == (str(exe), "PyPI wheel, put on PATH for this run")
    assert shutil.which("nvcc", path=env["PATH"]) == str(exe)


def test_nvcc_on_path_wins_over_the_wheel(tmp_path, monkeypatch):
    _fake_nvcc(tmp_path / "site")
    on_path = _fake_nvcc(tmp_path / "toolkit", "x")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site"), *sys.path])
    env = {"PATH": str(on_path.parent)}
    assert infra.provide_nvcc(env) == (str(on_path), "on PATH")
    assert env["PATH"] == str(on_path.parent)


def test_no_nvcc_anywhere(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    env = {"PATH": str(tmp_path)}
    assert infra.provide_nvcc(env) == (None, "none") and env == {"PATH": str(tmp_path)}


NVCC_TESTS = """
import shutil, pytest

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_marked_build_check():
    pass

def test_runtime_build_check():
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")

@pytest.mark.skip(reason="needs a CUDA GPU")
def test_other_skip():
    pass

@pytest.mark.xfail(reason="nvcc bug", run=False)
def test_xfail_naming_nvcc():
    pass
"""


@pytest.fixture
def no_nvcc(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # in-process: the inner run needs no other tool
    monkeypatch.setattr(infra, "wheel_nvcc", lambda: None)


def test_missing_nvcc_skips_outside_ci(pytester, inner, no_nvcc):
    pytester.makepyfile(test_n=NVCC_TESTS)
    result = inner()
    result.assert_outcomes(skipped=3, xfailed=1)
    result.stdout.fnmatch_lines(["gpu_viz nvcc: none (*"])


def test_missing_nvcc_fails_the_build_checks_under_ci(pytester, inner, no_nvcc, monkeypatch):
    pytester.makepyfile(test_n=NVCC_TESTS)
    monkeypatch.setenv("CI", "true")
    result = inner("-rfE")
    # the skipif one fails at setup (pytest counts it as an error), the runtime skip in the call
    result.assert_outcomes(errors=1, failed=1, skipped=1, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    assert "CI=true: this build check may not skip ('nvcc not on PATH')" in text
    assert "CI=true: this build check may not skip ('needs nvcc')" in text
    assert "make setup" in text


def test_present_nvcc_under_ci_changes_nothing(pytester, inner, tmp_path, monkeypatch):
    pytester.makepyfile(test_n=NVCC_TESTS)
    exe = _fake_nvcc(tmp_path / "tk")
    monkeypatch.setenv("PATH", str(exe.parent))
    monkeypatch.setenv("CI", "true")
    result = inner()
    result.assert_outcomes(passed=2, skipped=1, xfailed=1)


def _nvcc_spec():
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    return re.search(r"^NVCC_SPEC \?=(.*)$", text, re.M).group(1).split()


def test_makefile_installs_one_cuda_release_where_no_nvcc_is_on_path():
    spec = dict(s.split("==") for s in _nvcc_spec())
    # nvidia-cuda-nvcc's own requirements (cicc, crt headers, runtime headers) are unpinned: a newer
    # cicc writes PTX its ptxas rejects, so every part is pinned to the compiler's release
    assert set(spec) == {"nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt", "nvidia-cuda-runtime",
                         "nvidia-cuda-cccl"}, spec
    assert len(set(spec.values())) == 1 and re.fullmatch(r"\d+\.\d+\.\*", spec["nvidia-cuda-nvcc"]), spec
    make = subprocess.run(["make", "-n", "-C", str(ROOT), "setup"], capture_output=True, text=True,
                          env={**os.environ, "VENV": "/nonexistent-venv"})
    assert make.returncode == 0, make.stderr
    assert re.search(r"command -v nvcc .*\|\|.*pip install", make.stdout, re.S), make.stdout


needs_wheel = pytest.mark.skipif(infra.wheel_nvcc() is None, reason="no nvcc from PyPI in this interpreter (make setup used the nvcc on PATH, or PyPI has none for this Python)")


@pytest.mark.slow
@needs_wheel
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_89", "sm_90"])
def test_the_wheels_nvcc_builds_alone(tmp_path, arch):
    """The PyPI compiler needs nothing from a toolkit: with only /usr/bin and /bin on PATH it builds
    a kernel that includes cuda_fp16.h (crt, runtime and CCCL headers) to a cubin (cicc, ptxas)."""
    src = tmp_path / "k.cu"
    src.write_text('#include <cuda_fp16.h>\nextern "C" __global__ void k(__half* y) '
                   "{ y[threadIdx.x] = __hadd(y[threadIdx.x], __float2half(1.0f)); }\n")
    proc = subprocess.run([infra.wheel_nvcc(), f"-arch={arch}", "-cubin", "-std=c++17", "-Xptxas", "-v",
                           "-o", str(tmp_path / "k.cubin"), str(src)],
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"Compiling entry function 'k' for '{arch}'" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------- timing

def _collect(*args):
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, capture_output=True, text=True)
    return proc.returncode, [ln for ln in proc.stdout.splitlines() if "::" in ln]


TIMING = {
    "tests/test_timing.py::test_cupy_timings_are_sane",
    "tests/test_timing.py::test_copy_kernel_floor_is_above_the_empty_kernel",
    "tests/test_timing.py::test_torch_copy_bandwidth_and_environment",
    "tests/test_rmsnorm_bench.py::test_gpu_run_smoke",
    "tests/test_memory.py::test_latency_staircase_is_sane",
    "tests/test_memory.py::test_staircase_monotone_ish",
    "tests/test_memory.py::test_read_bandwidth_is_plausible",
    "tests/test_memory.py::test_occupancy_sweep_rises",
    "tests/test_memory.py::test_host_bandwidth_is_plausible",
    "tests/test_memory.py::test_hardware_record_shape",
    "tests/test_scheduling.py::test_silicon_smid_and_times",
    "tests/test_scheduling.py::test_silicon_queue_waits",
    "tests/test_scheduling.py::test_scheduling_record_keeps_every_blocks_timeline",
    "tests/test_divergence.py::test_divergence_costs_more_than_uniform",
    "tests/test_exercises.py::test_predict_solution_passes_on_the_gpu",
    "tests/test_probes.py::test_probes_record_runs_every_probe",
    "tests/test_probes.py::test_data_residency_probe_matches_float64_and_staged_is_not_slower_beyond_l2",
}


@pytest.mark.slow
def test_timing_tests_are_marked_and_all_need_the_gpu():
    files = sorted({t.split("::")[0] for t in TIMING})
    rc, timing = _collect("-m", "timing", *files)
    assert rc == 0 and {t.split("[")[0] for t in timing} == TIMING, timing
    rc, stray = _collect("-m", "timing and not gpu")
    assert rc == pytest.ExitCode.NO_TESTS_COLLECTED and not stray, stray


#: The fast lane (`make test-fast`): its pytest marker expression, read from the Makefile.
#: Test files whose ids name an architecture because the emulator runs that architecture's PTX
#: (NVRTC, no nvcc): tests/test_emulator*.py, tests/test_emulated_*.py.
EMULATOR_TESTS = ("tests/test_emulator", "tests/test_emulated_")


def _fast_marks() -> str:
    return re.search(r"^FAST_MARKS := (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).strip()


@pytest.mark.slow
def test_the_fast_lane_builds_for_no_architecture():
    """A build check that compiles for the architectures with nvcc (a test id naming sm_NN) is marked
    slow: the fast lane leaves nvcc's minutes to `make test`.  The emulator's tests name the
    architecture whose PTX they run, compiled by NVRTC in milliseconds: they stay fast."""
    assert _fast_marks() == "not slow and not browser and not gpu"
    rc, fast = _collect("-m", _fast_marks())
    assert rc == 0 and fast
    per_arch = [t for t in fast if re.search(r"[\[-]sm_\d+[\]-]", t) and not t.startswith(EMULATOR_TESTS)]
    assert not per_arch, per_arch


def test_gpu_check_runs_the_timing_tests_alone():
    script = (ROOT / "scripts" / "gpu-check").read_text()
    body = lambda name: re.search(rf"^{name}\(\) {{.*?^}}", script, re.M | re.S).group(0)  # noqa: E731
    assert '"gpu and timing"' in body("run_timing_tests")
    assert '"gpu and not timing and not sanitizer"' in body("run_other_tests")
    # the compute-sanitizer comparisons (tests/test_emulator_gpu.py) run in the sanitize phase
    assert '"gpu and sanitizer"' in body("run_sanitize")
    tests = body("run_tests").splitlines()
    assert [ln.strip() for ln in tests[1:-1]] == ["run_timing_tests", "run_other_tests"]
    # checks: nothing else is on the GPU until the timing tests are done; then the sanitizer in
    # the background beside the other tests
    checks = [ln.strip() for ln in body("run_checks").splitlines()[1:-1]]
    assert checks[0] == "run_timing_tests" and checks.index("run_sanitize &") < checks.index("run_other_tests")
    assert "-m gpu " not in script  # no other pytest run over every GPU test


def test_gpu_check_merges_both_parts_for_the_record(tmp_path):
    """merge_junit: one logs/pytest-gpu.xml with every case and the counts added up."""
    script = (ROOT / "scripts" / "gpu-check").read_text()
    func = re.search(r"^merge_junit\(\) {.*?^}", script, re.M | re.S).group(0)
    for part, (tests, fails, cases) in {"timing": (2, 1, ["t1", "t2"]), "other": (3, 0, ["o1", "o2", "o3"])}.items():
        xml = "".join(f'<testcase classname="c" name="{c}"/>' for c in cases)
        (tmp_path / f"pytest-gpu-{part}.xml").write_text(
            f'<testsuites><testsuite name="pytest" errors="0" failures="{fails}" skipped="1" tests="{tests}" '
            f'time="1.5">{xml}</testsuite></testsuites>')
    subprocess.run(["bash", "-c", f'{func}\nmerge_junit'], check=True,
                   env={**os.environ, "LOGS": str(tmp_path), "PY": sys.executable})
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gpu_check_record
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    s = gpu_check_record.pytest_summary(tmp_path)
    assert (s["tests"], s["failures"], s["errors"], s["skipped"], s["seconds"]) == (5, 1, 0, 2, 3.0), s


def test_gpu_check_records_a_pytest_run_cut_short(tmp_path):
    """A pytest part stopped by its time limit writes no JUnit file: the record must say the run
    did not finish (its exit status, complete: false), not count the other part's tests as a clean
    run (a run whose second part timed out would read "4 tests, 0 failures")."""
    script = (ROOT / "scripts" / "gpu-check").read_text()
    func = re.search(r"^pytest_gpu\(\) {.*?^}", script, re.M | re.S).group(0)
    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    env = {**os.environ, "LOGS": str(tmp_path), "PY": str(slow), "SUMMARY": str(tmp_path / "summary.txt"),
           "GPU_VIZ_SEED": "1"}
    subprocess.run(["bash", "-c", f'stamp() {{ date; }}; note() {{ echo "$*" >> "$SUMMARY"; }}\n{func}\n'
                    'pytest_gpu other "gpu and not timing" 1'], check=True, env=env, timeout=60)
    assert (tmp_path / "pytest-gpu-other.exit").read_text().strip() == "124"
    (tmp_path / "pytest-gpu-timing.exit").write_text("0\n")
    (tmp_path / "pytest-gpu-timing.xml").write_text(
        '<testsuites><testsuite tests="1" failures="0" errors="0" skipped="0" time="1">'
        '<testcase classname="tests.test_t" name="t"/></testsuite></testsuites>')
    # merge_junit's output: only the part that finished
    (tmp_path / "pytest-gpu.xml").write_text((tmp_path / "pytest-gpu-timing.xml").read_text())
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gpu_check_record
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    s = gpu_check_record.pytest_summary(tmp_path)
    assert s["complete"] is False and s["parts"]["other"] == {"exit": 124, "junit": False}, s
    # both parts at their end (one with a failing test): complete
    (tmp_path / "pytest-gpu-other.exit").write_text("1\n")
    (tmp_path / "pytest-gpu-other.xml").write_text((tmp_path / "pytest-gpu-timing.xml").read_text())
    assert gpu_check_record.pytest_summary(tmp_path)["complete"] is True
    # no JUnit file at all, a part interrupted: still a record that says so
    (tmp_path / "pytest-gpu.xml").unlink()
    (tmp_path / "pytest-gpu-other.exit").write_text("2\n")
    s = gpu_check_record.pytest_summary(tmp_path)
    assert s["complete"] is False and s["tests"] == 0


def _defined_twice(path: Path):
    """(name, first line, second line) for each def/class bound twice in one module or class body:
    the later binding silently replaces the earlier one (a test that never runs, a helper that is
    not the one read)."""
    import ast

    found = []

    def scan(body):
        seen = {}
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # @overload stubs and @x.setter-style redefinitions are meant to rebind
                decos = [ast.unparse(d) for d in node.decorator_list]
                if any(d.endswith((".setter", ".deleter", "overload")) for d in decos):
                    continue
                if node.name in seen:
                    found.append((node.name, seen[node.name], node.lineno))
                seen[node.name] = node.lineno
                if isinstance(node, ast.ClassDef):
                    scan(node.body)

    scan(ast.parse(path.read_text(), filename=str(path)).body)
    return found


def test_no_module_defines_a_function_or_class_twice():
    files = sorted([*ROOT.glob("gpu_viz/**/*.py"), *TESTS.glob("*.py"), *ROOT.glob("scripts/**/*.py")])
    assert len(files) > 50
    twice = {str(p.relative_to(ROOT)): d for p in files if (d := _defined_twice(p))}
    assert not twice, twice


def test_the_duplicate_check_finds_a_shadowed_test(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text("def test_a():\n    assert False\n\n\nclass K:\n    def m(self): ...\n    def m(self): ...\n\n\n"
                 "def test_a():\n    pass\n")
    assert _defined_twice(f) == [("m", 6, 7), ("test_a", 1, 10)]


def test_gpu_check_scripts_import_the_package_whatever_pythonpath(tmp_path):
    """The scripts gpu-check runs by path (scripts/sanitize/*.py) import gpu_viz from the checkout
    even when the caller's PYTHONPATH points elsewhere (the device's wheel install sets it, and
    without the checkout first every sanitizer job dies on `import gpu_viz` before its first
    launch, the package not being installed there): the script puts the checkout first on PYTHONPATH and keeps the
    caller's entries after it."""
    script = (ROOT / "scripts" / "gpu-check").read_text()
    head = script[:script.index("phases=(")]
    probe = tmp_path / "probe.py"
    probe.write_text("import os\nprint(os.environ['PYTHONPATH'])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path / "elsewhere")
    # the script's own prologue (cd, ROOT, the export), then a file run by path from another folder
    out = subprocess.run(["bash", "-c", head.replace('cd "$(dirname "$0")/.."', f'cd "{ROOT}"')
                          + f'\ncd "{tmp_path}" && "{sys.executable}" "{probe}"'],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().split(":") == [str(ROOT), str(tmp_path / "elsewhere")], out.stdout
