"""When one machine is not enough: the class kit's image recipe and Kubernetes values, checked
without a cluster, a registry or network.

* ``hub/values.yaml`` is YAML and valid against zero-to-jupyterhub's own values schema (chart
  4.4.0, tests/data/z2jh/: every key the chart does not document is an error there); its profiles
  are a CPU one, a GPU one (``nvidia.com/gpu``) and a MIG one (``nvidia.com/mig-1g.5gb``), each
  ``kubespawner_override`` key a KubeSpawner or JupyterHub Spawner setting; every profile mounts
  the nbgrader exchange, a ReadWriteMany claim (``hub/exchange-pvc.yaml``) at the path the
  students' nbgrader config reads;
* ``hub/Dockerfile`` starts from a CUDA runtime image, copies only what the kit holds (and the
  wheel), runs ``install-course.sh`` as its one install step, and serves as uid 1000;
* ``install-course.sh`` itself, in a plain venv with the wheel built from this checkout (slow):
  it installs CuPy, the course, nbgrader and jupyterhub-singleuser, and its own checks pass.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu_viz import classkit

DATA = Path(__file__).resolve().parent / "data" / "z2jh"
HUB = classkit.FILES / "hub"
ROOT = Path(__file__).resolve().parent.parent
#: The keys KubeSpawner documents for a profile (KubeSpawner.profile_list's help, 7.1.0).
PROFILE_KEYS = {"display_name", "description", "default", "slug", "kubespawner_override", "profile_options"}


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    out = tmp_path_factory.mktemp("kit") / "course"
    classkit.build(out, course_id="gpu101")
    return out


@pytest.fixture(scope="module")
def values(kit):
    return yaml.safe_load((kit / "hub" / "values.yaml").read_text())


def _drop_required(schema):
    """The chart's schema checks the merged values (the chart's defaults + ours); ours alone lack
    the keys only the defaults set, so "required" is dropped -- every key we set is still checked."""
    if isinstance(schema, dict):
        return {k: _drop_required(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [_drop_required(v) for v in schema]
    return schema


def test_values_are_valid_for_the_chart(values):
    import jsonschema

    schema = _drop_required(json.loads((DATA / "values.schema-4.4.0.json").read_text()))
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(values), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors)


def test_the_schema_check_catches_a_key_the_chart_lacks(values):
    """The check can fail: a misspelt key (``singleuser.profilelist``) is an error."""
    import jsonschema

    schema = _drop_required(json.loads((DATA / "values.schema-4.4.0.json").read_text()))
    bad = json.loads(json.dumps(values))
    bad["singleuser"]["profilelist"] = bad["singleuser"].pop("profileList")
    assert any("profilelist" in e.message for e in jsonschema.Draft7Validator(schema).iter_errors(bad))


def test_profiles_cpu_gpu_and_mig(values):
    from jupyterhub.spawner import Spawner

    allowed = set(Spawner.class_trait_names(config=True))
    allowed |= set((DATA / "kubespawner-7.1.0-traits.txt").read_text().split())
    profiles = values["singleuser"]["profileList"]
    limits = {}
    for p in profiles:
        assert set(p) <= PROFILE_KEYS, set(p) - PROFILE_KEYS
        override = p.get("kubespawner_override", {})
        assert set(override) <= allowed, f"{p['slug']}: not KubeSpawner settings: {set(override) - allowed}"
        limits[p["slug"]] = override.get("extra_resource_limits", {})
    assert limits == {"cpu": {}, "gpu": {"nvidia.com/gpu": "1"}, "mig": {"nvidia.com/mig-1g.5gb": "1"}}
    assert [p["slug"] for p in profiles if p.get("default")] == ["cpu"]


def test_every_server_mounts_the_exchange_where_nbgrader_looks(values, kit):
    su = values["singleuser"]
    claim = yaml.safe_load((kit / "hub" / "exchange-pvc.yaml").read_text())
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    vols = {v["name"]: v for v in su["storage"]["extraVolumes"]}
    mounts = {m["name"]: m["mountPath"] for m in su["storage"]["extraVolumeMounts"]}
    exchange = [n for n, v in vols.items() if v["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]]
    assert len(exchange) == 1 and mounts[exchange[0]] == su["extraEnv"]["NBGRADER_EXCHANGE"]
    assert su["extraEnv"]["NBGRADER_COURSE_ID"] == "gpu101"        # the kit's --course-id
    # no profile replaces the volumes (a profile's override would drop the exchange)
    assert not any({"volumes", "volume_mounts"} & set(p.get("kubespawner_override", {})) for p in su["profileList"])
    student = (kit / "hub" / "student" / "nbgrader_config.py").read_text()
    assert "NBGRADER_EXCHANGE" in student and "NBGRADER_COURSE_ID" in student


def _instructions(path: Path):
    """The Dockerfile's instructions: (keyword, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            kw, _, rest = line.partition(" ")
            out.append((kw.upper(), rest.strip()))
    return out


def test_the_dockerfile_builds_from_a_cuda_runtime_with_the_install_script_alone():
    steps = _instructions(HUB / "Dockerfile")
    args = dict(a.split("=", 1) for k, a in steps if k == "ARG" and "=" in a)
    froms = [a for k, a in steps if k == "FROM"]
    assert len(froms) == 1 and re.fullmatch(r"nvidia/cuda:1[2-9]\.\d+\.\d+-runtime-ubuntu\d+\.\d+",
                                            froms[0].replace("${CUDA_IMAGE}", args["CUDA_IMAGE"]))
    for k, a in steps:
        if k == "COPY":
            *sources, _dest = shlex.split(a)
            for s in sources:
                assert s == "gpu_viz-*.whl" or (HUB / s).exists(), f"COPY {s}: not in the kit's hub/"
    runs = " ".join(a for k, a in steps if k == "RUN")
    assert "install-course.sh" in runs
    assert not re.search(r"\bpip3? install\b|-m pip\b", runs), "a pip install outside install-course.sh"
    assert ("USER", "1000") in steps
    assert [a for k, a in steps if k == "CMD"] == ['["jupyterhub-singleuser"]']


def test_install_script_refuses_bad_arguments(tmp_path):
    script = str(HUB / "install-course.sh")
    for argv, words in (([], "usage"), ([sys.executable, str(tmp_path / "x.whl")], "no such file"),
                        ([sys.executable, "setup.py"], "must be the course's .whl"),
                        ([str(tmp_path / "nopython"), "x.whl"], "not an executable python")):
        r = subprocess.run(["bash", script, *argv], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and words in r.stderr, (argv, r.stderr)


@pytest.mark.slow
def test_install_script_in_a_plain_venv(tmp_path):
    """The image's install step, run by CI in a plain venv (no GPU: CuPy imports, the emulator's
    NVRTC is there).  TORCH_SPEC as the Makefile takes it (CI: the CPU build)."""
    dist = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    wheel = next(dist.glob("gpu_viz-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = dict(os.environ)
    env["TORCH_SPEC"] = env.get("TORCH_SPEC", "torch")
    r = subprocess.run(["bash", str(HUB / "install-course.sh"), str(venv / "bin" / "python"), str(wheel)],
                       capture_output=True, text=True, timeout=1500, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    assert "install-course.sh: done" in r.stdout
    cfg = venv / "etc" / "jupyter" / "nbgrader_config.py"
    assert cfg.is_file() and "JUPYTERHUB_USER" in cfg.read_text()
