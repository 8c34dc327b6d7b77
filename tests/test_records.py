"""gpu_viz.measure.records: one JSON file per GPU run -- written where the caller says (the current
folder by default, never the installed package), found in a checkout or an installed wheel."""
import json
from pathlib import Path

import pytest

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
        records.save_record({"date": date, "gpu": "NVIDIA H200", "rows": []}, tag="run", directory=tmp_path)
    rec = records.newest("*-run.json", tmp_path)
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
    tags = {r["_file"].rsplit("-", 1)[1] for r in records.lesson_records("09_kernel_scheduling")}
    assert {"scheduling.json", "probes.json"} <= tags
    assert records.lesson_records("99_nothing") == []
    # keyed by topic: the same records under any number, and every notebook's topic decided
    assert records.lesson_records("kernel_scheduling") == records.lesson_records("42_kernel_scheduling")
    stems = [p.stem for p in (Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb")]
    assert {records.topic(s) for s in stems} == set(records.LESSON_RECORDS), stems
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
    # one test's outcome, as notebook 13's CPU mode shows it: failures are {"test": id, ...} dicts
    assert records.test_outcome(rec, "tests/test_reduction.py::test_every_block_size[2]") == "FAILED"
    assert records.test_outcome(rec, "tests/test_reduction.py::test_every_block_size[1]") == "passed"
    assert records.test_outcome(rec, "tests/test_reduction.py::test_other") == "not in that run"
    assert records.gpu_tests("tests/test_nothing.py", tmp_path) is None


def test_a_recorded_device_is_never_labelled_live():
    """CPU mode's device comes from the hardware record: its source says recorded, and how the
    numbers were read, never "live:" (the figure's Data line read "(not live): live: ...")."""
    from gpu_viz.measure import records

    rec = {"gpu": "NVIDIA H200", "date": "2026-12-01", "driver": "580.1",
           "device": {**_device_fields(), "source": "live: cudaDeviceGetAttribute"}}
    src = records.device_of(rec).source
    assert "live:" not in src and src.startswith("recorded on NVIDIA H200, 2026-12-01") \
        and "read by cudaDeviceGetAttribute" in src, src


def _device_fields():
    from gpu_viz import device

    return {k: v for k, v in device.spec_sheet(device.DECK_GPU).as_dict().items()}


def test_a_record_never_replaces_another(tmp_path):
    """Two runs of one GPU on one date with one tag keep both files; the later is the newest,
    for every reader that goes through load_records / newest, also against another tag's files."""
    first = records.save_record({"date": "2026-12-01", "gpu": "NVIDIA H200", "bench": 1, "rows": []},
                                tag="bench", directory=tmp_path)
    for run in (2, 3):
        records.save_record({"date": "2026-12-01", "gpu": "NVIDIA H200", "bench": run, "rows": []},
                            tag="bench", directory=tmp_path)
    records.save_record({"date": "2026-12-01", "gpu": "NVIDIA H200", "bench": 9, "rows": []},
                        tag="quick-bench", directory=tmp_path)
    names = sorted(p.name for p in tmp_path.glob("*-bench.json"))
    assert names == ["nvidia-h200-2026-12-01-bench.json", "nvidia-h200-2026-12-01-quick-bench.json",
                     "nvidia-h200-2026-12-01.2-bench.json", "nvidia-h200-2026-12-01.3-bench.json"]
    assert first.name == names[0] and json.loads(first.read_text())["bench"] == 1
    assert [r["bench"] for r in records.load_records("*[0-9]-bench.json", tmp_path)] == [3, 2, 1]
    assert records.newest("*[0-9]-bench.json", tmp_path)["bench"] == 3
    # an older date stays older whatever its sequence number
    records.save_record({"date": "2026-11-30", "gpu": "NVIDIA H200", "bench": 0, "rows": []}, tag="bench",
                        directory=tmp_path)
    records.save_record({"date": "2026-11-30", "gpu": "NVIDIA H200", "bench": -1, "rows": []}, tag="bench",
                        directory=tmp_path)
    assert [r["bench"] for r in records.load_records("*[0-9]-bench.json", tmp_path)] == [3, 2, 1, -1, 0]
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



# ----------------------------------------------------------------------------- bad records
COMMITTED = records.results_dir()


def _hardware_record(date="2026-12-01"):
    """A complete hardware record (the committed one, re-dated)."""
    rec = json.loads(next(COMMITTED.glob("*-hardware.json")).read_text(encoding="utf-8"))
    return dict(rec, date=date)


def _write(path, text):
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


_BAD_RECORDS = {
    "empty list": ("[]", "not a JSON object but a list"),
    "null": ("null", "not a JSON object but null"),
    "a string": ('"fast"', "not a JSON object but the string 'fast'"),
    "a number": ("3", "not a JSON object but the number 3"),
    "truncated": ('{"date": "2026-11-29", "gpu": "NVIDIA H200", "rows": [', "not valid JSON"),
    "non-string date": ('{"date": 20261209, "gpu": "NVIDIA H200", "rows": []}', "date is the number 20261209, not a date"),
    "not a date": ('{"date": "yesterday", "gpu": "NVIDIA H200", "rows": []}', "date is 'yesterday', not a date"),
    "future date": ('{"date": "2099-01-01", "gpu": "NVIDIA H200", "rows": []}', "date is 2099-01-01, in the future"),
    "unknown GPU": ('{"date": "2026-11-29", "rows": []}', "has no 'gpu'"),
    "empty GPU name": ('{"date": "2026-11-29", "gpu": " ", "rows": []}', "gpu is the string ' ', expected name"),
    "rows not a list": ('{"date": "2026-11-29", "gpu": "NVIDIA H200", "rows": {}}', "rows is an object"),
    "not UTF-8": (b'{"date": "2026-11-29", "gpu": "NVIDIA \xff"}', "not UTF-8 text"),
}


@pytest.mark.parametrize("case", sorted(_BAD_RECORDS))
def test_a_bad_record_is_skipped_and_said_once_by_name_and_reason(tmp_path, capsys, case):
    """Bug class: one bad file in benchmarks/results made every reader raise (load_records on [],
    null, a string, a non-string date).  Each shape is left out, said once on stderr by its file
    name and reason; the good record beside it is still read, and nothing raises."""
    text, reason = _BAD_RECORDS[case]
    good = records.save_record({"date": "2026-11-20", "gpu": "NVIDIA H200", "rows": []}, tag="t", directory=tmp_path)
    bad = _write(tmp_path / "nvidia-h200-2026-11-29-t.json", text)
    for _ in range(3):
        assert [r["_file"] for r in records.load_records(directory=tmp_path)] == [good.name]
        assert records.newest("*-t.json", tmp_path)["_file"] == good.name
    err = capsys.readouterr().err
    assert err.count(bad.name) == 1 and reason in err, err
    assert (str(bad), err.split("skipped: ", 1)[1].strip()) in records.skipped_records()


def test_a_folder_and_an_unreadable_file_are_skipped(tmp_path, capsys):
    (tmp_path / "nvidia-h200-2026-11-29-t.json").mkdir()
    (tmp_path / "nvidia-h200-2026-11-28-t.json").symlink_to(tmp_path / "gone")  # reading it fails
    assert records.load_records(directory=tmp_path) == [] and records.newest("*.json", tmp_path) is None
    err = capsys.readouterr().err
    assert "2026-11-29-t.json is skipped: a folder" in err
    assert "2026-11-28-t.json is skipped: cannot be read: No such file or directory" in err


def test_a_skipped_newer_record_is_said_where_its_numbers_would_have_been(tmp_path):
    """Bug class: a stale record passing for the newest.  A truncated newest run is skipped; the
    older run shown in its place says so in its label, and two runs of a day never read alike."""
    base = {"gpu": "NVIDIA H200", "driver": "580.1", "copy_GBps": 4000.0, "launch_floor_us": 2.0,
            "checks": [], "skipped": [], "rows": [{"op": "rmsnorm"}]}
    first = records.save_record(dict(base, date="2026-12-03"), tag="fused", directory=tmp_path)
    second = records.save_record(dict(base, date="2026-12-03"), tag="fused", directory=tmp_path)
    assert records.label(records.newest("*-fused.json", tmp_path)) == \
        "recorded on NVIDIA H200, 2026-12-03, run 2, driver 580.1 (not live)"
    third = tmp_path / "nvidia-h200-2026-12-03.3-fused.json"
    text = second.read_text(encoding="utf-8")
    third.write_text(text[:len(text) // 2], encoding="utf-8")  # cut short
    rec = records.newest("*-fused.json", tmp_path)
    assert rec["_file"] == second.name
    lab = records.label(rec)
    assert lab.startswith("recorded on NVIDIA H200, 2026-12-03, run 2, driver 580.1 (not live); ")
    assert f"the newer record {third.name} was skipped (not valid JSON" in lab
    # an older skipped file is not news: the newest usable record's label is its own
    third.unlink()
    _write(tmp_path / "nvidia-h200-2026-12-02-fused.json", "[]")
    assert records.label(records.newest("*-fused.json", tmp_path)) == \
        "recorded on NVIDIA H200, 2026-12-03, run 2, driver 580.1 (not live)"
    assert first.is_file()


def test_a_fused_record_without_the_keys_notebook_10_reads_is_skipped(tmp_path):
    rec = {"date": "2026-12-03", "gpu": "NVIDIA H200", "rows": []}
    records.save_record(rec, tag="fused", directory=tmp_path)
    assert records.newest("*-fused.json", tmp_path) is None
    assert "has no 'copy_GBps', 'launch_floor_us'" in records.skipped_note("*-fused.json", tmp_path)
    assert records.problem(dict(rec, copy_GBps=float("nan"), launch_floor_us=1),
                           "x-2026-12-03-fused.json") == "copy_GBps is the number nan, expected number"
    assert records.problem(dict(rec, copy_GBps=1, launch_floor_us=1, skipped={}),
                           "x-2026-12-03-quick-fused.json") == "skipped is an object, expected list"


@pytest.mark.parametrize("damage", ["no compute_capability", "device is a list", "capability of one number",
                                    "sm_count a string", "no latency"])
def test_a_partial_hardware_record_is_skipped_and_the_older_one_says_so(tmp_path, monkeypatch, damage):
    """Bug class: a newer hardware record with a partial `device` raised KeyError:
    'compute_capability' in notebooks 01, 02, 04, 05, 09 and 13 (records.lesson_device).  It is
    skipped; the CPU models use the older hardware record, whose label says the newer was skipped;
    with no other, the deck's L4 spec sheet, and the label says why."""
    from gpu_viz import backend, device

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    bad = _hardware_record("2026-12-05")
    if damage == "no compute_capability":
        del bad["device"]["compute_capability"]
    elif damage == "device is a list":
        bad["device"] = []
    elif damage == "capability of one number":
        bad["device"]["compute_capability"] = [9]
    elif damage == "sm_count a string":
        bad["device"]["sm_count"] = "132"
    else:
        del bad["latency"]
    bad_path = records.save_record(bad, tag="hardware", directory=tmp_path)
    info, lab = records.lesson_device()  # no usable record: the L4, and why
    assert info.name == device.spec_sheet(device.DECK_GPU).name
    assert lab.startswith(backend.MODEL_LABEL) and f"the record {bad_path.name} was skipped" in lab
    assert "L4 spec sheet" in lab
    older = records.save_record(_hardware_record("2026-12-01"), tag="hardware", directory=tmp_path)
    info, lab = records.lesson_device()
    assert info.name == "NVIDIA H200" and info.compute_capability == (9, 0)
    assert lab.startswith("recorded on NVIDIA H200, 2026-12-01") and f"the newer record {bad_path.name} was skipped" in lab
    assert records.recorded_device()[1] == lab and older.is_file()
    assert records.recorded_hardware()[1] == lab


def test_missing_says_which_record_was_skipped(tmp_path):
    assert records.missing("probes", tmp_path) == ("not recorded yet; on a GPU this cell measures it live, and an "
                                                   "instructor makes the record with `gpu-viz record probes`")
    assert records.missing("memory-counters", tmp_path, live=False) == (
        "not recorded yet; an instructor records them on a GPU with `gpu-viz record memory-counters`")
    _write(tmp_path / "nvidia-h200-2026-12-01-probes.json", "null")
    said = records.missing("probes", tmp_path)
    assert said.startswith("no usable record (the record nvidia-h200-2026-12-01-probes.json was "
                           "skipped (not a JSON object but null)); on a GPU this cell"), said
    assert said.endswith("`gpu-viz record probes`")


def test_every_committed_record_is_usable():
    """The committed records all pass the schema: a reader never skips one of them."""
    bad = [(p.name, records.problem(json.loads(p.read_text(encoding="utf-8")), p.name))
           for p in sorted(records.results_dir().glob("*.json"))]
    assert [b for b in bad if b[1]] == []


def test_gpu_viz_bench_in_cpu_mode_with_a_bad_record_names_it_and_does_not_raise(tmp_path, monkeypatch, capsys):
    """`gpu-viz bench` without a GPU prints the newest committed record: a bad one beside it is
    skipped, named on stderr, never a traceback."""
    from gpu_viz import backend, cli

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    for name in ("nvidia-h200-2026-12-05-fused.json", "nvidia-h200-2026-12-06-fused.json"):
        _write(tmp_path / name, {"nvidia-h200-2026-12-05-fused.json": "[]"}.get(name, '"x"'))
    assert cli.main(["bench"]) == 2
    out, err = capsys.readouterr()
    assert "needs a CUDA GPU" in out and "Traceback" not in err
    assert "2026-12-05-fused.json is skipped" in err and "2026-12-06-fused.json is skipped" in err


def test_every_reader_of_a_record_hears_of_a_skipped_newer_run_of_its_tag(tmp_path):
    """Notebook 11 picks its record from load_records() by its rows, not through newest(): the
    record it shows still says that a newer run of its tag was skipped; a skipped file of another
    tag is not news to it."""
    base = {"gpu": "NVIDIA H200", "copy_GBps": 1.0, "launch_floor_us": 1.0,
            "rows": [{"op": "rmsnorm", "impl": "eager"}]}
    records.save_record(dict(base, date="2026-11-20"), tag="fused", directory=tmp_path)
    _write(tmp_path / "nvidia-h200-2026-11-22-fused.json", '{"date": "2026-11-22", "gpu": "NVIDIA H200"}')
    _write(tmp_path / "nvidia-h200-2026-11-23-probes.json", "null")
    shown = next(r for r in records.load_records(directory=tmp_path)
                 if any(row.get("impl") == "eager" for row in r.get("rows", [])))
    lab = records.label(shown)
    assert "the newer record nvidia-h200-2026-11-22-fused.json was skipped (has no 'rows', 'copy_GBps', 'launch_floor_us')" in lab
    assert "probes" not in lab


def test_a_record_is_saved_whole_or_not_at_all(tmp_path):
    """Bug class: a truncated record.  On a full disk (a 64 KiB tmpfs, where it can be mounted)
    save_record raises and leaves no record file at all, and an earlier save of the same run
    (``replace=``) stays whole."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        rec = {"date": "2026-11-20", "gpu": "NVIDIA H200", "rows": [{"op": "x", "note": "y" * 100}]}
        first = records.save_record(rec, tag="t", directory=disk)
        big = dict(rec, rows=[{"op": "x", "note": "y" * 200_000}])
        with pytest.raises(OSError):
            records.save_record(big, tag="t", directory=disk, replace=first)
        with pytest.raises(OSError):
            records.save_record(big, tag="t", directory=disk)
        assert sorted(p.name for p in disk.iterdir()) == [first.name]
        assert json.loads(first.read_text(encoding="utf-8")) == rec
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
