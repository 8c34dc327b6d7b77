"""Notebook 12's four phases: the traced build of kernels/rmsnorm_deck.cu -- CPU model, frames,
player, notebook; on a GPU, model == silicon bit for bit over many (d, block) pairs."""
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gpu_viz import disasm, kernels
from gpu_viz.frames import rmsnorm_deck as fr
from gpu_viz.lessons import RMSNORM_DECK
from gpu_viz.model import rmsnorm_deck as m
from gpu_viz.record import rmsnorm_deck as rec
from gpu_viz.rmsnorm import reference

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "12_four_phase_trace.ipynb"
DS = (1, 7, 33, 2048, 5000)
BLOCKS = (1, 32, 33, 96, 1000, 1024)
F32 = np.float32


def _row(rng, d):
    x = rng.standard_normal(d).astype(F32)
    w = (1 + 0.25 * rng.standard_normal(d)).astype(F32)
    return x, w


# ---------------------------------------------------------------------------------------------
# an independent scalar re-implementation of the kernel, thread by thread (slow, obvious)

def _scalar_kernel(x, w, block, eps=1e-6):
    d = len(x)
    local = []
    for t in range(block):
        acc = F32(0)
        for i in range(t, d, block):
            acc = F32(acc + F32(x[i] * x[i]))
        local.append(acc)

    def warp_sum(vals):                          # reduce.cuh warp_reduce_sum over n = len(vals) lanes
        v, n = list(vals), len(vals)
        for off in (16, 8, 4, 2, 1):
            v = [F32(v[l] + v[l + off]) if l + off < n else v[l] for l in range(n)]
        return v[0]

    partials = [warp_sum(local[s:s + 32]) for s in range(0, block, 32)]
    n0 = min(block, 32)
    start = [partials[l] if l < len(partials) else F32(0) for l in range(n0)]
    total = warp_sum(start)
    mean = F32(total / F32(d))
    rstd = F32(F32(1) / np.sqrt(F32(mean + F32(eps))))
    y = np.array([F32(F32(x[i] * rstd) * w[i]) for i in range(d)], dtype=F32)
    return np.array(local, dtype=F32), total, rstd, y


@pytest.mark.parametrize("d,block", [(1, 1), (7, 33), (33, 32), (100, 96), (2048, 1024), (700, 1000), (300, 7)])
def test_model_matches_a_scalar_thread_by_thread_kernel(rng, d, block):
    x, w = _row(rng, d)
    t = m.trace(x, w, block=block)
    local, total, rstd, y = _scalar_kernel(x, w, block)
    assert t["local"].view(np.uint32).tolist() == local.view(np.uint32).tolist()
    assert t["scalars"][0].view(np.uint32) == np.asarray(total, F32).view(np.uint32)
    assert t["scalars"][3].view(np.uint32) == np.asarray(rstd, F32).view(np.uint32)
    assert np.array_equal(t["y"].view(np.uint32), y.view(np.uint32))


@pytest.mark.parametrize("d", DS)
@pytest.mark.parametrize("block", BLOCKS)
def test_model_within_the_documented_bound_of_float64(rng, d, block):
    x, w = _row(rng, d)
    t = m.trace(x, w, block=block)
    s64 = float(np.sum(x.astype(np.float64) ** 2))
    assert abs(float(t["scalars"][0]) - s64) <= m.sum_error_bound(d, block) * s64
    ref = reference.rmsnorm(x, w)
    rel = np.abs(t["y"].astype(np.float64) - ref) / np.maximum(np.abs(ref), 1e-30)
    assert rel.max() <= m.output_rtol(d, block), (rel.max(), m.output_rtol(d, block))


@pytest.mark.parametrize("block", BLOCKS)
def test_trace_layout_nan_marks_missing_lanes(rng, block):
    x, w = _row(rng, 2048)
    t = m.trace(x, w, block=block)
    nw = -(-block // 32)
    assert t["warp_lanes"].shape == (nw, 6, 32) and t["w0_lanes"].shape == (6, 32)
    assert t["local"].shape == (block,) and t["y"].shape == (2048,) and t["scalars"].shape == (4,)
    present = (np.arange(nw * 32) < block).reshape(nw, 32)
    for s in range(6):
        assert np.array_equal(np.isfinite(t["warp_lanes"][:, s]), present)
    assert np.all(np.isfinite(t["w0_lanes"][:, :min(block, 32)]))
    assert np.all(np.isnan(t["w0_lanes"][:, min(block, 32):]))
    # every warp's lane 0 ends with its warp's sum, and the hand-off slots hold exactly those
    assert np.array_equal(t["smem"][:nw], t["warp_lanes"][:, -1, 0])
    # all arrays float32
    assert all(a.dtype == np.float32 for a in t.arrays.values())


def test_deck_variant_doubles_lanes_past_31_but_not_lane_0(rng):
    x, w = _row(rng, 2048)
    deck = m.trace(x, w, block=1024, variant="deck")
    good = m.trace(x, w, block=1024)
    # at 32 warps the deck is right: lane 0 and the output agree bit for bit with the guarded variant
    assert deck.diff(good, ["local", "smem", "y", "scalars"]) == []
    # ... but lane 31 after offset 16 doubled (its partner lane 47 does not exist in the warp)
    assert deck["warp_lanes"][0, 1, 31] == F32(2) * deck["warp_lanes"][0, 0, 31]
    assert good["warp_lanes"][0, 1, 31] == good["warp_lanes"][0, 0, 31]


@pytest.mark.parametrize("kwargs,word", [
    (dict(x=np.ones(4), block=0), "block"), (dict(x=np.ones(4), block=1025), "block"),
    (dict(x=np.ones((2, 4))), "x"), (dict(x=np.array([1.0, np.nan])), "x"),
    (dict(x=np.ones(4), w=np.ones(3)), "w"), (dict(x=np.ones(64), block=33, variant="deck"), "block % 32"),
    (dict(x=np.ones(4), variant="fast"), "variant"), (dict(x=np.ones(0)), "d (row length)")])
def test_bad_arguments_name_themselves(kwargs, word):
    with pytest.raises(ValueError, match=re.escape(word)):
        m.trace(**kwargs)


def test_steps_cover_four_phases_in_order():
    t = m.trace(np.linspace(-1, 1, 2048), block=1024)
    phases = [s.data["phase"] for s in t.steps]
    assert phases == sorted(phases) and set(phases) == {1, 2, 3, 4}
    assert 18 <= len(t.steps) <= 40
    kinds = [s.data["kind"] for s in t.steps]
    assert kinds.count("shuffle") == 6 and kinds.count("w0") == 6 and kinds.count("handoff") == 1


@pytest.mark.skipif(kernels.find_tool("nvcc") is None, reason="needs nvcc")
def test_traced_ptx_has_no_fma_and_correctly_rounded_div_sqrt(tmp_path):
    """The bit-for-bit contract of the traced build: no contraction into fma anywhere, and in every
    entry point phase 3's mean and rstd as IEEE div / sqrt (no rsqrt.approx)."""
    out = tmp_path / "t.ptx"
    subprocess.run([kernels.find_tool("nvcc"), "-arch=sm_90", "-ptx", "-std=c++17", f"-I{kernels.KERNEL_DIR}",
                    *kernels.TRACED_OPTIONS, "-o", str(out), str(kernels.kernel_path(m.FILE))], check=True)
    ptx = out.read_text()
    assert "fma.rn.f32" not in ptx and "fma.f32" not in ptx and "rsqrt.approx" not in ptx
    for kernel in m.KERNELS.values():
        entry = disasm._entry(ptx, kernel)
        assert entry.count("div.rn.f32") == 2 and entry.count("sqrt.rn.f32") == 1, kernel


@pytest.mark.skipif(kernels.find_tool("nvcc") is None, reason="needs nvcc")
def test_plain_build_keeps_the_decks_fast_rsqrt(tmp_path):
    out = tmp_path / "p.ptx"
    subprocess.run([kernels.find_tool("nvcc"), "-arch=sm_90", "-ptx", "-std=c++17", f"-I{kernels.KERNEL_DIR}",
                    "-o", str(out), str(kernels.kernel_path(m.FILE))], check=True)
    assert "rsqrt.approx.f32" in out.read_text()


def test_the_player_shows_the_taught_phases():
    """Notebook 12 steps through exactly the lines notebook 10 shows: the deck variant's source is
    the four phase regions of kernels/rmsnorm_deck.cu, without the TRACE lines."""
    shown = m.source("deck").text
    for phase in ("phase1", "phase2", "phase3", "phase4"):
        assert kernels.snippet(m.FILE, phase).text in shown
    assert "TRACE" not in shown and "block_reduce_sum" in m.source("guarded").text


def test_record_without_a_gpu_is_the_labelled_model(rng):
    from gpu_viz import backend

    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    t = RMSNORM_DECK.trace(x=rng.standard_normal(64).astype(np.float32), block=32, producer="model")
    assert t.source == "model" and t.provenance == backend.MODEL_LABEL
    t = RMSNORM_DECK.trace(x=rng.standard_normal(64).astype(np.float32), block=32)
    assert t.source in ("emulator", "model") and "measured on" not in t.provenance
    with pytest.raises(backend.GPUUnavailable):
        rec.trace(np.ones(4), block=4)


def test_every_step_needle_is_a_line_of_the_shown_source():
    for variant, block in (("guarded", 100), ("deck", 256)):
        snip = m.source(variant)
        for step in m.trace(np.ones(300), block=block, variant=variant).steps:
            assert step.line == snip.line_of(step.data["needle"])
            assert 1 <= step.line <= len(snip.text.splitlines())


def test_frames_and_static_player(rng):
    x, w = _row(rng, 2048)
    t = m.trace(x, w, block=1024)
    anim = fr.animation(t, warp=3)
    assert len(anim) == len(t.steps) == 20
    assert all(f.markup.startswith("<svg") for f in anim.frames)
    html = anim.static_html()
    assert 'data-frames="20"' in html
    meta = json.loads(re.search(r"F = (\[.*?\]);", html).group(1))
    captions = [c["c"] for c in meta]
    for phase, caption in fr.PHASE_CAPTIONS.items():
        assert any(c.startswith(f"phase {phase}") and caption in c for c in captions), phase
    assert t.provenance in html or "CPU model" in html


def test_frames_reject_bad_arguments(rng):
    t = m.trace(rng.standard_normal(64), block=64)
    with pytest.raises(ValueError, match="warp"):
        fr.frames(t, warp=2)
    with pytest.raises(ValueError, match="kinds"):
        fr.frames(t, kinds=["phase9"])
    assert len(fr.frames(t, kinds=["w0"])) == 6


@pytest.mark.slow
def test_notebook_runs_in_cpu_mode_and_its_players_step_through_four_phases(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all("slideshow" in c.metadata for c in nb.cells)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit without outputs"
    old = os.environ.get("GPU_VIZ_FORCE_CPU")
    os.environ["GPU_VIZ_FORCE_CPU"] = "1"
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    finally:
        if old is None:
            os.environ.pop("GPU_VIZ_FORCE_CPU", None)
        else:
            os.environ["GPU_VIZ_FORCE_CPU"] = old
    html = [o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", [])
            if "text/html" in o.get("data", {}) and "gpu-viz-player" in o["data"]["text/html"]]
    counts = [int(re.search(r'data-frames="(\d+)"', h).group(1)) for h in html]
    assert counts[0] == 20, counts          # the deck's 1024 threads on 2048 features
    main = html[0]
    for phase in (1, 2, 3, 4):
        assert f"phase {phase}:" in main
    # CPU mode: a player shows the emulator's run of the kernel's PTX or the CPU model, and says which
    assert all(("CPU model" in h) != ("emulated on the CPU" in h) for h in html), \
        "every player must say what made it: the emulator or the CPU model"
    assert not any("measured on" in h for h in html), "a CPU-mode player claims a measurement"
    text = "\n".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "not run" in text.lower() or "cpu mode" in text.lower()


# ---------------------------------------------------------------------------------------------
# GPU: the silicon against the model, bit for bit

@pytest.mark.gpu
@pytest.mark.parametrize("prefill", [True, False])
def test_silicon_equals_model_bit_for_bit(rng, prefill):
    failures = []
    for d in DS:
        for block in BLOCKS:
            x, w = _row(rng, d)
            gpu = rec.trace(x, w, block=block, prefill=prefill)
            cpu = m.trace(x, w, block=block, prefill=prefill)
            problems = cpu.diff(gpu)
            if problems:
                failures.append(f"d={d} block={block}: " + "; ".join(problems))
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize("block", [32, 96, 256, 1024])
def test_deck_variant_silicon_equals_model(rng, block):
    x, w = _row(rng, 2048)
    gpu = rec.trace(x, w, block=block, variant="deck", prefill=True)
    cpu = m.trace(x, w, block=block, variant="deck", prefill=True)
    cpu.assert_equal(gpu)
    # without prefill: everything before warp 0's read is still knowable
    gpu = rec.trace(x, w, block=block, variant="deck", prefill=False)
    cpu = m.trace(x, w, block=block, variant="deck", prefill=False)
    knowable = [k for k in cpu.arrays if k not in m.unknowable(cpu.params)]
    cpu.assert_equal(gpu, knowable)
    nw = block // 32
    assert np.array_equal(cpu["smem"][:nw].view(np.uint32), gpu["smem"][:nw].view(np.uint32))


@pytest.mark.gpu
@pytest.mark.parametrize("d", DS)
@pytest.mark.parametrize("block", BLOCKS)
def test_silicon_output_within_tolerance_of_float64(rng, d, block):
    x, w = _row(rng, d)
    y = rec.trace(x, w, block=block)["y"]
    ref = reference.rmsnorm(x, w)
    rel = np.abs(y.astype(np.float64) - ref) / np.maximum(np.abs(ref), 1e-30)
    assert np.all(np.isfinite(y)) and rel.max() <= m.output_rtol(d, block)


@pytest.mark.browser
def test_static_player_steps_through_the_four_phases_in_chromium(browser, tmp_path, rng):
    """Click 'step forward' through the static player (no kernel) and read each caption.

    ``browser`` is the one session Chromium (tests/conftest_browser.py): a second Playwright of its
    own here would clash with the one tests/test_browser.py's tests keep open."""
    x, w = _row(rng, 2048)
    anim = fr.animation(m.trace(x, w, block=1024), warp=1)
    page_file = tmp_path / "player.html"
    page_file.write_text("<html><body>" + anim.static_html() + "</body></html>")
    context = browser.new_context()
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri())
        player = page.locator(".gpu-viz-player")
        n = int(player.get_attribute("data-frames"))
        assert n == 20
        phases, lit = [], []
        for i in range(n):
            assert player.get_attribute("data-frame") == str(i)
            caption = page.locator(".gpu-viz-caption").inner_text()
            phases.append(int(re.match(r"phase (\d)", caption).group(1)))
            lit.append(page.evaluate("Array.from(document.querySelectorAll('span[data-line]'))"
                                     ".filter(s => s.style.fontWeight === 'bold').length"))
            if i < n - 1:
                player.locator("button[data-act=next]").click()
        assert phases == sorted(phases) and set(phases) == {1, 2, 3, 4}
        assert all(c == 1 for c in lit), "every frame lights exactly one source line"
        assert not errors, errors
    finally:
        context.close()


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "8"])
def test_default_inputs_names_d(bad):
    with pytest.raises(ValueError, match="d \\(the row length\\) must be a positive integer"):
        rec.default_inputs(d=bad)
