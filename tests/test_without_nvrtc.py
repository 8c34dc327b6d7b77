"""CPU mode without NVRTC (no ``gpu-viz[emulator]``): nothing that needs the emulator raises into a
notebook; each cell says what it cannot show and what to install.

``GPU_VIZ_NO_EMULATOR=1`` makes the emulator report NVRTC missing on a machine that has it, so these
tests run anywhere: the switch itself, every claims section of notebooks 07 and 08, every lesson's
trace (the model stands in where there is one, its label naming what the emulator needs; a
:class:`gpu_viz.lessons.NotTraced` where there is none), every kernel exercise's verdict, and
(slow) every notebook executed that way.
"""
import inspect
import re

import pytest

from gpu_viz import backend, emulator, lessons
from gpu_viz.claims import memory_access as claims
from gpu_viz.emulator import nvrtc

INSTALL = "pip install 'gpu-viz[emulator]'"
NOT_SHOWN = "Not shown here:"


@pytest.fixture
def no_nvrtc(monkeypatch):
    """CPU mode, and the emulator reporting NVRTC missing."""
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    monkeypatch.setenv(nvrtc.NO_EMULATOR_ENV, "1")


# ----------------------------------------------------------------------------- the switch

def test_the_switch_makes_every_emulator_entry_report_nvrtc_missing(no_nvrtc):
    assert nvrtc.switched_off() and not emulator.available()
    for call in (nvrtc.version, lambda: nvrtc.compile_ptx("extern \"C\" __global__ void k() {}", "k.cu"),
                 lambda: emulator.compile("extern \"C\" __global__ void k() {}")):
        with pytest.raises(emulator.NVRTCUnavailable, match=re.escape(nvrtc.NO_EMULATOR_ENV)) as info:
            call()
        assert INSTALL in str(info.value)
    from gpu_viz import doctor

    assert doctor.emulator_status().startswith("unavailable (NVRTC is switched off by GPU_VIZ_NO_EMULATOR")


def test_the_doctor_says_to_unset_the_switch_not_to_install(no_nvrtc):
    """Bug class: advice that cannot help -- with the emulator switched off on purpose, installing NVRTC
    changes nothing; the way back is to unset the variable."""
    from gpu_viz import doctor

    advice = " ".join(doctor.report(show=False).advice)
    assert f"Unset {nvrtc.NO_EMULATOR_ENV}" in advice and "pip install 'gpu-viz[emulator]'" not in advice


@pytest.mark.parametrize("value, off", [("", False), ("0", False), (" 0 ", False), ("1", True), ("yes", True)])
def test_the_switch_reads_like_force_cpu(monkeypatch, value, off):
    monkeypatch.setenv(nvrtc.NO_EMULATOR_ENV, value)
    assert nvrtc.switched_off() is off
    if off:
        assert not emulator.available()


def test_the_missing_message_names_the_extra(monkeypatch):
    """NVRTC really missing (no binding loads): the message names gpu-viz[emulator]."""
    monkeypatch.delenv(nvrtc.NO_EMULATOR_ENV, raising=False)
    monkeypatch.setattr(nvrtc, "_libnvrtc", lambda: None)
    monkeypatch.setitem(__import__("sys").modules, "cuda.bindings", None)   # import fails: no bindings
    with pytest.raises(emulator.NVRTCUnavailable, match=re.escape(INSTALL)):
        nvrtc._binding()
    assert "is not installed" in nvrtc.not_shown("the counts")


def test_not_shown_says_what_why_and_what_to_install(no_nvrtc):
    text = nvrtc.not_shown("the counts", "or run on a GPU")
    assert text.startswith(f"**{NOT_SHOWN} the counts.**") and INSTALL in text and "Colab" in text
    assert text.endswith(", or run on a GPU.") and nvrtc.NO_EMULATOR_ENV in text
    with pytest.raises(TypeError, match="what"):
        nvrtc.not_shown(3)
    with pytest.raises(ValueError, match="what"):
        nvrtc.not_shown("  ")


# ----------------------------------------------------------------------------- notebooks 07 and 08's claims

#: The sections whose numbers come from the emulator (each says what is not shown without NVRTC) ...
EMULATED_SECTIONS = {
    "pattern_section": {}, "bank_section": {"names": ["32x32 tile"], "words": "Read the loads."},
    "race_section": {}, "ladder_section": {}, "block_sizes_section": {},
    "race_runs_section": {"traces": None},   # filled in by the test: NotTraced from RACES
}
#: ... and those that read records or tables and need no emulator (they must not raise either).
OTHER_SECTIONS = {"bandwidth_section": {}, "ladder_timing_section": {}, "addresses_section": {},
                  "counters_section": {}, "race_record_section": {}, "shuffle_section": {}, "sources_section": {}}


def test_every_section_is_in_one_list():
    """A new ``*_section`` must be added to one of the lists, so it is run without NVRTC below."""
    found = {n for n, f in inspect.getmembers(claims, inspect.isfunction)
             if n.endswith("_section") and f.__module__ == claims.__name__}
    assert found == set(EMULATED_SECTIONS) | set(OTHER_SECTIONS)


@pytest.mark.parametrize("name", sorted(EMULATED_SECTIONS))
def test_an_emulated_section_says_what_is_not_shown(no_nvrtc, name):
    kw = dict(EMULATED_SECTIONS[name])
    if "traces" in kw:
        kw["traces"] = [lessons.RACES.trace(kernel=k, missing_ok=True) for k in ("histogram_racy", "reverse_racy")]
    text = getattr(claims, name)(**kw)
    assert text.startswith(f"**{NOT_SHOWN}") and INSTALL in text, text
    assert "|" not in text and emulator.LABEL not in text, text    # no table, no emulated label
    if kw.get("words"):
        assert text.endswith(kw["words"])


@pytest.mark.parametrize("name", sorted(OTHER_SECTIONS))
def test_a_section_without_the_emulator_still_shows(no_nvrtc, name):
    text = getattr(claims, name)(**OTHER_SECTIONS[name])
    assert isinstance(text, str) and text.strip() and emulator.LABEL not in text, text


def test_the_sources_section_says_the_emulated_tables_are_absent(no_nvrtc):
    assert "not here" in claims.sources_section() and INSTALL in claims.sources_section()


@pytest.mark.parametrize("count", ["pattern_counts", "bank_counts", "ladder_counts", "ladder_block_sizes",
                                   "race_report"])
def test_the_counts_raise_the_emulators_error_naming_the_install(no_nvrtc, count):
    with pytest.raises(emulator.NVRTCUnavailable, match=re.escape(INSTALL)):
        getattr(claims, count)()


def test_the_emulated_label_says_nothing_was_emulated(no_nvrtc):
    label = claims.emulated_label()
    assert label.startswith("nothing emulated here") and INSTALL in label and emulator.LABEL not in label


def test_race_runs_section_refuses_no_traces():
    with pytest.raises(ValueError, match="traces"):
        claims.race_runs_section([])


# ----------------------------------------------------------------------------- lessons

@pytest.mark.parametrize("stem", sorted(lessons.LESSONS))
def test_a_lesson_falls_back_to_its_model_or_says_why_not(no_nvrtc, stem):
    les = lessons.LESSONS[stem]
    small = dict(les.cases.small)
    if "model" not in les.cpu:
        with pytest.raises(emulator.NVRTCUnavailable, match=re.escape(INSTALL)):
            les.trace(seed=3, **small)
        nt = les.trace(seed=3, missing_ok=True, **small)
        assert isinstance(nt, lessons.NotTraced) and not nt
        assert les.animation(nt) is nt and nt._repr_markdown_() == nt.text()
        assert nt.text().startswith(f"**{NOT_SHOWN} the animation of") and INSTALL in nt.text()
        assert les.kernel_file in nt.text()
        return
    tr = les.trace(seed=3, missing_ok=True, **small)
    assert tr.source == "model" and (backend.MODEL_LABEL in tr.provenance or "MODEL (not measured)" in tr.provenance)
    # the model standing in for the emulator says so; a model that comes first (its own choice) does not
    assert tr.provenance.endswith(lessons.EMULATOR_MISSING_NOTE) == (les.cpu[0] == "emulator"), tr.provenance
    forced = les.trace(seed=3, producer="model", **small)
    assert lessons.EMULATOR_MISSING_NOTE not in forced.provenance
    les.animation(tr)


def test_not_traced_shows_as_markdown(no_nvrtc, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    nt = lessons.REDUCTION_LADDER.trace(rung="strided", block=128, missing_ok=True)
    lessons.REDUCTION_LADDER.animation(nt).show()
    assert len(shown) == 1 and shown[0].data == nt.text() and "the `strided` rung" in nt.text()


def test_show_without_a_trace_shows_the_note(no_nvrtc, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    lessons.RACES.show()
    assert len(shown) == 1 and shown[0].data.startswith(f"**{NOT_SHOWN}") and INSTALL in shown[0].data


def test_missing_ok_is_a_bool():
    with pytest.raises(TypeError, match="missing_ok"):
        lessons.RACES.trace(missing_ok="yes")


def test_a_lesson_with_nvrtc_traces_as_before():
    """missing_ok changes nothing where the emulator runs: the trace is the emulator's."""
    if backend.has_gpu() or not emulator.available():
        pytest.skip("CPU mode with NVRTC")
    small = dict(lessons.RACES.cases.small)
    tr = lessons.RACES.trace(seed=3, missing_ok=True, **small)
    again = lessons.RACES.trace(seed=3, **small)
    assert tr.source == again.source == "emulator" and tr.provenance == again.provenance


# ----------------------------------------------------------------------------- kernel exercises

def _kernel_exercises():
    from gpu_viz import exercises as ex

    return [e.id for e in ex.exercises() if e.kind == "write-the-kernel"]


@pytest.mark.parametrize("eid", _kernel_exercises())
def test_a_kernel_exercise_is_not_run_and_says_what_to_install(no_nvrtc, eid):
    from gpu_viz import exercises as ex

    code = ex.get(eid).placeholder
    ns = {}
    exec(code, ns)       # the learner's cell: its starting kernel in `code`, the verdict in `v`
    v = ns["v"]
    assert v.ok is None and "was not run" in v.message and INSTALL in v.message, v.text()
    assert v.text().count("not graded") == 1, v.text()


# ----------------------------------------------------------------------------- every notebook (slow)

#: Calls whose cell must say what is not shown when NVRTC is missing.
NEEDS_EMULATOR = re.compile(r"claims\.(?:pattern|bank|race|race_runs|ladder|block_sizes)_section\(|missing_ok=True")


def _cell_text(cell):
    parts = []
    for o in cell.get("outputs", []):
        parts.append(o.get("text", ""))
        parts.extend(str(v) for k, v in o.get("data", {}).items() if k.startswith("text/"))
    return "\n".join(parts)


def _kernel_exercise_cell(cell):
    return any(f"ex.check('{eid}'" in cell.source for eid in _kernel_exercises())


@pytest.mark.slow
def test_every_notebook_runs_in_cpu_mode_without_nvrtc():
    """Every notebook, executed in CPU mode with GPU_VIZ_NO_EMULATOR=1 (as the wheel runs on a
    machine without gpu-viz[emulator]): no error output, nothing labelled emulated, and each cell
    that needs the emulator says what it does not show and what to install."""
    from test_notebooks import NOTEBOOKS, _errors, execute

    problems, skipped = [], {}
    for path in NOTEBOOKS:
        nb = execute(path, "cpu-no-nvrtc")
        problems += [f"{path.stem}: {e}" for e in _errors(nb)]
        skipped[path.stem] = 0
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            text = _cell_text(cell)
            if emulator.LABEL in text:
                problems.append(f"{path.stem} cell {i}: labelled emulated without NVRTC")
            if NOT_SHOWN in text:
                skipped[path.stem] += 1
                if INSTALL not in text:
                    problems.append(f"{path.stem} cell {i}: says '{NOT_SHOWN}' without what to install")
            if NEEDS_EMULATOR.search(cell.source) and NOT_SHOWN not in text:
                problems.append(f"{path.stem} cell {i}: needs the emulator but does not say what is not shown")
            if _kernel_exercise_cell(cell) and not ("was not run" in text and INSTALL in text):
                problems.append(f"{path.stem} cell {i}: a kernel exercise without NVRTC must say it was not run")
    assert not problems, "\n".join(problems)
    # notebooks 07 and 08 are counted by the emulator: their counts and race players are skipped here
    assert skipped["07_coalescing_and_banks"] >= 3 and skipped["08_races_and_reduction"] >= 8, skipped


def test_the_switch_holds_for_a_kernel_compiled_before_it(monkeypatch):
    """Bug class: a program compiled before the switch was set came back from the compile cache, so
    a kernel exercise still ran in the emulator (seen only when an earlier test had compiled it)."""
    src = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }'
    monkeypatch.delenv(nvrtc.NO_EMULATOR_ENV, raising=False)
    emulator.compile(src, name="cached.cu")
    monkeypatch.setenv(nvrtc.NO_EMULATOR_ENV, "1")
    with pytest.raises(emulator.NVRTCUnavailable, match=re.escape(nvrtc.NO_EMULATOR_ENV)):
        emulator.compile(src, name="cached.cu")
