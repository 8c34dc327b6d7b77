"""gpu_viz.measure.records: one JSON file per GPU run -- written where the caller says (the current
folder by default, never the installed package), found in a checkout or an installed wheel."""
import json
from pathlib import Path

from gpu_viz.measure import records


def test_slug_and_record_roundtrip(tmp_path):
    assert records.gpu_slug("NVIDIA H200") == "nvidia-h200"
    assert records.gpu_slug("Tesla T4 ") == "tesla-t4"
    rec = {"date": "2026-11-29", "gpu": "NVIDIA H200", "rows": [{"op": "rmsnorm", "median_us": 1.5}]}
    path = records.save_record(rec, tag="x", directory=tmp_path)
    assert path.name == "nvidia-h200-2026-11-29-x.json"
    assert json.loads(path.read_text())["rows"][0]["median_us"] == 1.5
    (tmp_path / "broken.json").write_text("{")
    older = dict(rec, date="2026-01-01")
    records.save_record(older, directory=tmp_path)
    got = records.load_records(directory=tmp_path)
    assert [r["date"] for r in got] == ["2026-11-29", "2026-01-01"]


def test_save_defaults_to_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = records.save_record({"date": "2026-12-01", "gpu": "NVIDIA L4", "rows": []}, tag="t")
    assert path.resolve() == (tmp_path / "nvidia-l4-2026-12-01-t.json").resolve() and path.is_file()


def test_course_dirs_are_the_checkout_s_or_the_wheel_s(tmp_path, monkeypatch):
    from gpu_viz import data

    pkg = tmp_path / "site" / "gpu_viz"
    monkeypatch.setattr(data, "PKG", pkg)
    monkeypatch.setattr(data, "CHECKOUT", None)                      # an installed wheel
    assert data.course_dir("benchmarks/results", "_results") == pkg / "_results"
    monkeypatch.setattr(data, "CHECKOUT", tmp_path / "repo")        # a source checkout
    (tmp_path / "repo" / "benchmarks" / "results").mkdir(parents=True)
    assert data.course_dir("benchmarks/results", "_results") == tmp_path / "repo" / "benchmarks" / "results"


def test_newest_and_label(tmp_path):
    for date in ("2026-11-29", "2026-11-30"):
        records.save_record({"date": date, "gpu": "NVIDIA H200", "rows": []}, tag="fused", directory=tmp_path)
    rec = records.newest("*-fused.json", tmp_path)
    assert rec["date"] == "2026-11-30" and records.label(rec) == "recorded on NVIDIA H200, 2026-11-30 (not live)"
    assert records.newest("*-nothing.json", tmp_path) is None
    rec["driver"] = "580.159.04"
    assert records.label(rec) == "recorded on NVIDIA H200, 2026-11-30, driver 580.159.04 (not live)"


def test_gpus_named_leaves_out_the_reference_headings():
    assert records.gpus_named("recorded on NVIDIA H200 (sm_90) beside the L4's 58 SMs") == {"H200", "L4"}
    assert records.gpus_named(f"| | {records.DECK_L4} | NVIDIA H200 |") == {"H200"}
    # SVG and HTML escape the apostrophe
    assert records.gpus_named("<text>the deck&#39;s L4 (spec sheet)</text><text>H200</text>") == {"H200"}
    assert records.gpus_named("Tesla T4, A100 and 128 cores, no GPU named here: 4 warps") == {"T4", "A100"}


def test_one_gpu_problems_catches_a_mixed_figure():
    mixed = ("cell 4", "NVIDIA L4 (sm_89): 58 SMs. Measurements shown: recorded on NVIDIA H200, 2026-12-01")
    fine = ("cell 9", f"| | {records.DECK_L4} | recorded on NVIDIA H200 |")
    specs = ("cell 6", f"| NVIDIA L4 | ... | NVIDIA H200 | ...\n\n{records.SPEC_COMPARISON} and whitepapers")
    assert records.one_gpu_problems([mixed, fine, specs], "H200") == ["cell 4 names ['L4'] beside H200"]
    # a spec comparison that also carries a measured number is a mixed table
    assert records.one_gpu_problems([("c", specs[1] + " recorded on NVIDIA H200")], "H200")


def test_lesson_records_and_device_in_cpu_mode(monkeypatch):
    from gpu_viz import backend

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    tags = {r["_file"].rsplit("-", 1)[1] for r in records.lesson_records("07_kernel_scheduling")}
    assert {"scheduling.json", "probes.json"} <= tags
    assert records.lesson_records("99_nothing") == []
    info, label = records.lesson_device()
    hw = records.newest("*-hardware.json")
    assert info.name == hw["gpu"] and label == records.label(hw) and label in info.source
    assert "gpu-viz record probes" in records.missing("probes")


def test_committed_records_have_the_design_fields():
    recs = records.load_records()
    assert recs, "no committed record found"
    for rec in recs:
        if rec.get("tool") == "ptxas":   # a compiler's report, no GPU in it: its own fields
            for key in ("date", "nvcc", "arches", "source_digest", "fused", "wide"):
                assert key in rec, f"{rec['_file']} lacks {key!r}"
            continue
        for key in ("date", "gpu", "sm", "driver", "cuda", "torch", "cupy"):
            assert key in rec, f"{rec['_file']} lacks {key!r}"
        for row in rec.get("rows", []):
            # every timed row: what, which implementation, how timed, the spread (DESIGN.md section 5);
            # the RMSNorm ops' rows also carry their (M, N) shape
            assert "op" in row, f"{rec['_file']}: a row lacks 'op': {row}"
            if "median_us" not in row:  # a summary row (e.g. scheduling waves), not a timing
                continue
            keys = ["impl", "timing", "p10_us", "p90_us"]
            if row["op"] in ("rmsnorm", "rmsnorm_gate"):
                keys += ["M", "N", "dtype", "GBps"]
            for key in keys:
                assert key in row, f"{rec['_file']}: a row lacks {key!r}: {row}"
            assert row["timing"] in ("kernel", "call"), f"{rec['_file']}: timing {row['timing']!r}"
            assert row["p10_us"] <= row["median_us"] <= row["p90_us"], f"{rec['_file']}: spread out of order: {row}"


def test_gpu_check_record_keeps_each_passed_test_and_cpu_mode_finds_it(tmp_path):
    """scripts/gpu_check_record.py writes every passed GPU test by node id; records.gpu_tests
    finds a notebook's check among them (passed and failed counted, skipped ones not)."""
    import importlib.util
    import json

    from gpu_viz.measure import records

    spec = importlib.util.spec_from_file_location("gcr", Path(__file__).resolve().parent.parent
                                                  / "scripts" / "gpu_check_record.py")
    gcr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gcr)
    (tmp_path / "pytest-gpu.xml").write_text("""<testsuites><testsuite tests="4" failures="1" errors="0" skipped="1" time="2">
      <testcase classname="tests.test_reduction" name="test_every_block_size[1]"/>
      <testcase classname="tests.test_reduction" name="test_every_block_size[2]"><failure message="off by one"/></testcase>
      <testcase classname="tests.test_reduction" name="test_other"><skipped/></testcase>
      <testcase classname="tests.test_x.TestGroup" name="test_y"/>
    </testsuite></testsuites>""")
    summary = gcr.pytest_summary(tmp_path)
    assert summary["passed"] == ["tests/test_reduction.py::test_every_block_size[1]",
                                 "tests/test_x.py::TestGroup::test_y"]
    assert summary["failed"][0]["test"] == "tests/test_reduction.py::test_every_block_size[2]"
    rec = {"date": "2026-12-01", "gpu": "NVIDIA H200", "pytest_gpu": summary}
    (tmp_path / "nvidia-h200-2026-12-01-gpu-check.json").write_text(json.dumps(rec))
    found = records.gpu_tests("tests/test_reduction.py::test_every_block_size", tmp_path)
    assert (found["passed"], found["failed"]) == (1, 1) and "NVIDIA H200, 2026-12-01" in found["label"]
    assert records.gpu_tests("tests/test_reduction.py::test_other", tmp_path) is None
    # one test's outcome, as notebook 10's CPU mode shows it: failures are {"test": id, ...} dicts
    assert records.test_outcome(rec, "tests/test_reduction.py::test_every_block_size[2]") == "FAILED"
    assert records.test_outcome(rec, "tests/test_reduction.py::test_every_block_size[1]") == "passed"
    assert records.test_outcome(rec, "tests/test_reduction.py::test_other") == "not in that run"
    assert records.gpu_tests("tests/test_nothing.py", tmp_path) is None


def test_a_recorded_device_is_never_labelled_live():
    """CPU mode's device comes from the hardware record: its source says recorded, and how the
    numbers were read, never "live:" (the figure's Data line read "(not live): live: ...")."""
    from gpu_viz.measure import memory

    rec = {"gpu": "NVIDIA H200", "date": "2026-12-01", "driver": "580.1",
           "device": {**_device_fields(), "source": "live: cudaDeviceGetAttribute"}}
    src = memory.recorded_device(rec).source
    assert "live:" not in src and src.startswith("recorded on NVIDIA H200, 2026-12-01") \
        and "read by cudaDeviceGetAttribute" in src, src


def _device_fields():
    from gpu_viz import device

    return {k: v for k, v in device.spec_sheet(device.DECK_GPU).as_dict().items()}


def test_a_record_never_replaces_another(tmp_path):
    """Two runs of one GPU on one date with one tag keep both files; the later is the newest,
    for every reader that goes through load_records / newest, also against another tag's files."""
    first = records.save_record({"date": "2026-12-01", "gpu": "NVIDIA H200", "run": 1, "rows": []},
                                tag="fused", directory=tmp_path)
    for run in (2, 3):
        records.save_record({"date": "2026-12-01", "gpu": "NVIDIA H200", "run": run, "rows": []},
                            tag="fused", directory=tmp_path)
    records.save_record({"date": "2026-12-01", "gpu": "NVIDIA H200", "run": 9, "rows": []},
                        tag="quick-fused", directory=tmp_path)
    names = sorted(p.name for p in tmp_path.glob("*-fused.json"))
    assert names == ["nvidia-h200-2026-12-01-fused.json", "nvidia-h200-2026-12-01-quick-fused.json",
                     "nvidia-h200-2026-12-01.2-fused.json", "nvidia-h200-2026-12-01.3-fused.json"]
    assert first.name == names[0] and json.loads(first.read_text())["run"] == 1
    assert [r["run"] for r in records.load_records("*[0-9]-fused.json", tmp_path)] == [3, 2, 1]
    assert records.newest("*[0-9]-fused.json", tmp_path)["run"] == 3
    # an older date stays older whatever its sequence number
    records.save_record({"date": "2026-11-30", "gpu": "NVIDIA H200", "run": 0, "rows": []}, tag="fused",
                        directory=tmp_path)
    records.save_record({"date": "2026-11-30", "gpu": "NVIDIA H200", "run": -1, "rows": []}, tag="fused",
                        directory=tmp_path)
    assert [r["run"] for r in records.load_records("*[0-9]-fused.json", tmp_path)] == [3, 2, 1, -1, 0]
    untagged = records.save_record({"date": "2026-12-01", "gpu": "NVIDIA L4", "rows": []}, directory=tmp_path)
    again = records.save_record({"date": "2026-12-01", "gpu": "NVIDIA L4", "rows": []}, directory=tmp_path)
    assert (untagged.name, again.name) == ("nvidia-l4-2026-12-01.json", "nvidia-l4-2026-12-01.2.json")


def test_gpus_named_sees_through_the_slides_typography():
    """A rendered table keeps names, dates and brackets whole with word joiners and no-break spaces
    (words.keep_whole): the one-GPU check reads the same GPUs through them, and a reference heading
    so marked is still left out."""
    from gpu_viz import words

    label = "recorded on NVIDIA H200, 2026-12-02, driver 580.159.04 (not live)"
    assert records.gpus_named(words.keep_whole(label)) == records.gpus_named(label) == {"H200"}
    for ref in records.REFERENCE_LABELS:
        assert records.gpus_named(words.keep_whole(ref) + " beside NVIDIA L4") == {"L4"}, ref
    assert words.plain(words.keep_whole(label)) == label

