"""The static figures: drawn from DeviceInfo numbers and measurements, each says where its data came
from, and each is readable on a 1280x720 slide (gpu_viz.figures.style.check) at the inputs the
notebooks use: CPU mode (spec sheets) and the committed GPU records."""
import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from gpu_viz import device, occupancy  # noqa: E402
from gpu_viz.figures import chip, memory as memory_figures, models, style  # noqa: E402
from gpu_viz.measure import memory, records  # noqa: E402
from gpu_viz.measure.timing import CALL, KERNEL  # noqa: E402
from gpu_viz.rmsnorm import bench as bm, plan as bplan, bench_record as brec, targets as tg, report  # noqa: E402


def texts(fig):
    """Every text of the figure, each with its line breaks and runs of spaces made single spaces."""
    return "\n".join(" ".join(t.get_text().split()) for t in fig.findobj(matplotlib.text.Text))


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


# -- the inputs the notebooks use ------------------------------------------------------------------

# CPU mode: device.current() is a spec sheet; every spec sheet stands for a GPU a learner may have
# (long names such as "NVIDIA A100-SXM4-80GB" included).  GPU records: the committed hardware record.
DEVICE_KEYS = sorted(device.SPEC_SHEETS) + ["recorded"]


def _hardware():
    rec, label = records.recorded_hardware()
    assert rec is not None, "no committed hardware record in benchmarks/results/"
    return rec, label, records.device_of(rec)


def _info(key):
    return _hardware()[2] if key == "recorded" else device.spec_sheet(key)


def _chip_measured():
    """Notebook 01's last figure from the record: levels and bandwidths as the notebook derives them."""
    rec, label, minfo = _hardware()
    levels = memory.summarize_levels(rec["latency"], minfo.l2_bytes)
    rows = [memory._as_row(p) for p in rec["bandwidth_vs_size"]]
    bw = {"L2": max(r["GBps"] for r in rows if r["size_bytes"] <= minfo.l2_bytes // 4), "DRAM": rows[-1]["GBps"],
          "copy": rec["copy_GBps"], "h2d": rec["host_bandwidth"]["h2d_GBps"]}
    return chip.draw_chip(minfo, latency=levels, bandwidth=bw, provenance=label)


# Notebook 05 in CPU mode without nvcc: the registers it assumes.
ASSUMED_RESOURCES = {"occ_light": occupancy.KernelResources("occ_light", 10),
                     "occ_heavy": occupancy.KernelResources("occ_heavy", 72),
                     "occ_smem": occupancy.KernelResources("occ_smem", 12, 16384)}


def _occupancy(key):
    info = _info(key)
    tables = {n: occupancy.table(info, r) for n, r in ASSUMED_RESOURCES.items()}
    label = (f"calculator only (CPU mode, no CUDA API): {info.name} {info.source}; registers ASSUMED "
             "(what ptxas reports for sm_89): no GPU and no nvcc")
    return memory_figures.plot_occupancy(tables, info, label)


def _fused_record():
    rec = brec.newest_record()
    assert rec is not None, "no committed fused record in benchmarks/results/"
    return rec, records.label(rec)


def _nb10_timings(rows, op):
    """Notebook 13's two panels, kernel and call timing, on a 12 x 5.5 in figure."""
    rec, label = _fused_record()
    timings = [t for t in (KERNEL, CALL) if any(r["timing"] == t and r["op"] == op for r in rows)]
    fig, axes = plt.subplots(1, len(timings), figsize=style.MAX_FIGSIZE_IN, squeeze=False)
    for ax, tm in zip(axes[0], timings):
        report.bar_chart(rows, provenance=label, timing=tm, op=op, ax=ax)
    fig.tight_layout()
    report.fit_legends(fig)  # as the notebook does, after the layout
    return fig


def _nb10_seed_shapes():
    rec, _ = _fused_record()
    rows = [r for r in rec["rows"] if (r["M"], r["N"]) in bplan.SEED_SHAPES and r["dtype"] == "float16"]
    return _nb10_timings(rows, "rmsnorm_gate")


def _nb10_bandwidth():
    rec, label = _fused_record()
    rows = [r for r in rec["rows"] if (r["M"], r["N"]) in tg.BANDWIDTH_SHAPES and r["timing"] == "kernel"
            and r["dtype"] == "float16" and r["impl"] in ("eager", "native", "fused", "compile")]
    return report.bar_chart(rows, provenance=label, metric="GBps", copy_GBps=rec["copy_GBps"])


# Notebook 11's speed-up chart, both timings, with the deck's 7.2x drawn across as the notebook does.
# On a GPU it times two shapes x five providers in float16; the record has neither of its shapes, so
# two of the record's shapes of the same widths stand in for them.
NB08_PROVIDERS = ("eager", "native", "compile", "deck4phase", "fused")
NB08_STAND_IN_SHAPES = [(4096, 2048), (16384, 4096)]


def _nb08_speedups():
    rec, label = _fused_record()
    shown = bm.add_speedups([dict(r) for r in rec["rows"] if r["op"] == "rmsnorm" and r["dtype"] == "float16"
                             and (r["M"], r["N"]) in NB08_STAND_IN_SHAPES and r["impl"] in NB08_PROVIDERS])
    fig, axes = plt.subplots(1, 2, figsize=(5.8 * 2, 5.0), squeeze=False)
    for ax, tm in zip(axes[0], (KERNEL, CALL)):
        report.bar_chart(shown, provenance=label, timing=tm, op="rmsnorm", metric="speedup_vs_eager", ax=ax)
        ax.axhline(7.2, color="k", ls="--", lw=1)
        ax.set_ylim(0, max(ax.get_ylim()[1], 7.2) * 1.3)
        ax.text(ax.get_xlim()[0], 7.2, " the deck's 7.2x", va="bottom", fontsize=14)
        ax.set_title(f"{tm} timing", fontsize=15)
    fig.tight_layout()
    return fig


FIGURES = {}
for _key in DEVICE_KEYS:
    FIGURES[f"draw_chip-{_key}"] = lambda k=_key: chip.draw_chip(_info(k))
    FIGURES[f"draw_sm-{_key}"] = lambda k=_key: chip.draw_sm(_info(k))
    FIGURES[f"draw_mapping-{_key}"] = lambda k=_key: chip.draw_mapping(_info(k))
    FIGURES[f"plot_staircase-{_key}"] = lambda k=_key: memory_figures.plot_staircase(
        _hardware()[0]["latency"], _info(k), _hardware()[1], deck_cycles=memory.DECK_LOAD_CYCLES)
    FIGURES[f"plot_bandwidth-{_key}"] = lambda k=_key: memory_figures.plot_bandwidth(
        _hardware()[0]["bandwidth_vs_size"], _info(k), _hardware()[1], _hardware()[0]["copy_GBps"])
    FIGURES[f"plot_occupancy-{_key}"] = lambda k=_key: _occupancy(k)
FIGURES["draw_chip-measured"] = _chip_measured
FIGURES["plot_sweep-recorded"] = lambda: memory_figures.plot_sweep(
    _hardware()[0]["occupancy_sweep"], _hardware()[2], _hardware()[1], _hardware()[0]["copy_GBps"],
    _hardware()[0]["littles_law"]["warps_per_sm"])
# the GPU's own occupancy tables (CUDA occupancy API), as recorded beside the measurements
FIGURES["plot_occupancy-record-live"] = lambda: memory_figures.plot_occupancy(
    _hardware()[0]["occupancy"], _hardware()[2], _hardware()[1])
FIGURES["bar_chart-nb10-seed-shapes"] = _nb10_seed_shapes
FIGURES["bar_chart-nb10-bandwidth"] = _nb10_bandwidth
FIGURES["bar_chart-nb08-speedups"] = _nb08_speedups




# The model plots of notebooks 04 and 12, at the notebooks' inputs.
def _latency_hiding(key):
    rec, label, _ = _hardware()
    info = _info(key)
    L = int(round(rec["dram_latency"]["cycles_per_load"])) if key == "recorded" else memory.DECK_LOAD_CYCLES
    name = "measured" if key == "recorded" else "the deck"
    return models.plot_latency_hiding([(L, name), (memory.DECK_LOAD_CYCLES, "the deck")], 16,
                                      info.max_threads_per_sm // info.warp_size,
                                      f"warp_scheduler_model, a model, nothing measured; L: {label}")


def _lost_partials():
    import numpy as np

    from gpu_viz.model import reduction

    widths = np.arange(8, 4097, 8)
    threads = np.maximum(np.minimum(256, widths // 8), 32)
    lost = [100 * reduction.lost_partials(int(t)).size / t for t in threads]
    return models.plot_lost_partials(widths, lost, "our reconstruction of the write-up's tree, CPU model, exact")


def _sum_error():
    import numpy as np

    from gpu_viz.model import rmsnorm_deck as model

    ds = 2 ** np.arange(6, 21, 2)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(int(d)).astype(np.float32) for d in ds]
    exact = [np.sum(x.astype(np.float64) ** 2) for x in xs]
    errors = {"kernel order, block = 1024": [abs(float(model.sum_of_squares_fp32(x, 1024)) - s) / s
                                             for x, s in zip(xs, exact)],
              "one thread, left to right": [abs(float(model.sequential_sum_of_squares_fp32(x)) - s) / s
                                            for x, s in zip(xs, exact)]}
    bounds = {"bound, block = 1024": [model.sum_error_bound(int(d), 1024) for d in ds],
              "bound, block = 1": [model.sum_error_bound(int(d), 1) for d in ds]}
    return models.plot_sum_error(ds, errors, "computed in numpy on the CPU in the kernel's order", bounds=bounds)


for _key in ("L4", "T4", "recorded"):
    FIGURES[f"plot_latency_hiding-{_key}"] = lambda k=_key: _latency_hiding(k)
FIGURES["plot_lost_partials"] = _lost_partials
FIGURES["plot_sum_error"] = _sum_error


def test_latency_hiding_draws_a_repeated_latency_once():
    fig = models.plot_latency_hiding([(200, "measured"), (200, "the deck")], 16, 48, "model")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    # bug class: the per-SM warp limit drawn on an axis of one scheduler's warps
    assert labels == ["L = 200 cycles (measured): ~13 warps", "max per scheduler: 12 (48 per SM / 4)"]


def test_model_plots_name_bad_input():
    with pytest.raises(ValueError, match="3 widths and 2 values"):
        models.plot_lost_partials([8, 16, 24], [0.0, 1.0], "model")
    with pytest.raises(ValueError, match="one value per length"):
        models.plot_sum_error([64, 256], {"a": [1e-7]}, "model")


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_is_readable_on_a_slide(name):
    fig = FIGURES[name]()
    assert style.check(fig) == []
    assert "Data: " in texts(fig)


def test_figures_keep_their_style_whatever_the_sessions_rcparams():
    # a session with tiny defaults: the figure functions set their own sizes
    with matplotlib.rc_context({"font.size": 6, "axes.titlesize": 6, "xtick.labelsize": 5, "ytick.labelsize": 5,
                                "legend.fontsize": 5, "axes.labelsize": 5}):
        figs = [FIGURES["draw_chip-L4"](), FIGURES["plot_staircase-recorded"](), FIGURES["plot_occupancy-T4"](),
                FIGURES["bar_chart-nb10-bandwidth"]()]
    for fig in figs:
        assert style.check(fig) == []


# -- the checker ------------------------------------------------------------------------------------

def _plain(figsize=(6, 4)):
    fig, ax = plt.subplots(figsize=figsize)
    ax.axis("off")
    return fig, ax


def test_check_passes_a_plain_readable_figure():
    fig, ax = _plain()
    ax.text(0.1, 0.5, "readable", fontsize=16)
    fig.text(0.01, 0.01, "Data: somewhere", fontsize=14)
    assert style.check(fig) == []
    style.assert_readable(fig)


def test_check_reports_small_text_by_name_and_size():
    fig, ax = _plain()
    ax.text(0.1, 0.5, "tiny label", fontsize=9)
    ax.text(0.1, 0.2, "fine label", fontsize=14)
    problems = style.check(fig)
    assert len(problems) == 1
    assert "'tiny label' is 9 pt (12.0 CSS px)" in problems[0]


def test_check_reports_small_tick_labels_and_legend_text():
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([0, 1], [0, 1], label="a line")
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=10)
    problems = style.check(fig)
    assert any("'a line' is 10 pt" in p for p in problems)
    assert any(re.search(r"'[-−]?\d[\d.]*' is 8 pt", p) for p in problems)


def test_check_reports_overlapping_texts():
    fig, ax = _plain()
    ax.text(0.2, 0.5, "first label", fontsize=16)
    ax.text(0.25, 0.5, "second label", fontsize=16)
    ax.text(0.2, 0.1, "apart", fontsize=16)
    problems = style.check(fig)
    assert len(problems) == 1
    assert "'first label' and 'second label' overlap" in problems[0]


def test_check_reports_crowded_tick_labels():
    """Bug class: shape labels whose boxes do not overlap yet stand closer than half an em read
    as one token from the back of a room (notebook 13: "1024×40961024×8192")."""
    fig, ax = plt.subplots(figsize=(3.2, 3))
    ax.set_yticks([])
    ax.set_xticks([0, 1, 2])
    ax.set_xticklabels(["1024×4096", "1024×8192", "x"], fontsize=16)
    ax.set_xlim(-0.5, 2.5)
    problems = style.check(fig)
    assert any(p.startswith("tick labels '1024×4096' and '1024×8192' are") for p in problems), problems
    assert style.crowded_ticks(ax, which="y") == []
    with pytest.raises(ValueError, match="which must be 'x', 'y' or 'xy'"):
        style.crowded_ticks(ax, which="z")
    fig.set_size_inches(10, 3)
    assert [p for p in style.check(fig) if p.startswith("tick labels")] == []
    plt.close(fig)


def test_fit_legends_turns_crowded_shape_labels(op="rmsnorm_gate"):
    """Notebook 13's pair on the newest record: laid out, its four shape labels stand closer than
    half an em in the narrow axes; fit_legends turns them and lays the figure out again, so the
    checker finds nothing (nothing past the edge either).  Roomy labels stay level."""
    rec, label = _fused_record()
    rows = [r for r in rec["rows"] if (r["M"], r["N"]) in bplan.SEED_SHAPES and r["dtype"] == "float16"]
    fig = _notebook10_pair(rows, label, op, fit=False)
    assert any(style.crowded_ticks(ax, which="x") for ax in fig.axes)
    report.fit_legends(fig)
    assert style.check(fig) == []
    assert all(t.get_rotation() == 30 for ax in fig.axes for t in ax.get_xticklabels())
    plt.close(fig)
    two = [r for r in rows if (r["M"], r["N"]) in bplan.SEED_SHAPES[:2]]
    fig = _notebook10_pair(two, label, op, fit=True)
    assert style.check(fig) == []
    assert all(t.get_rotation() == 0 for ax in fig.axes for t in ax.get_xticklabels())
    plt.close(fig)


def test_check_reports_a_figure_over_the_slide():
    fig, ax = _plain(figsize=(14, 4))
    ax.text(0.1, 0.5, "readable", fontsize=16)
    problems = style.check(fig)
    assert problems == ["figure is 14 x 4 in (1344 x 384 CSS px); the most is 12 x 5.5 in"]
    fig.set_size_inches(10, 6)
    assert style.check(fig) == ["figure is 10 x 6 in (960 x 576 CSS px); the most is 12 x 5.5 in"]


def test_check_reports_text_past_the_edge():
    fig, ax = _plain()
    fig.text(0.9, 0.5, "runs off the right edge", fontsize=16)
    problems = style.check(fig)
    assert len(problems) == 1 and "'runs off the right edge' reaches" in problems[0]


def test_check_ignores_invisible_and_empty_texts():
    fig, ax = _plain()
    ax.text(0.1, 0.5, "hidden and small", fontsize=6, visible=False)
    ax.text(0.1, 0.5, "", fontsize=6)
    ax.annotate("", xy=(0.5, 0.5), xytext=(0.1, 0.5), arrowprops=dict(arrowstyle="->"))
    ax.text(0.1, 0.5, "shown", fontsize=16)
    # the axes is off: its tick labels (default 10 pt) are not drawn, so not reported
    assert style.check(fig) == []


def test_assert_readable_lists_every_problem():
    fig, ax = _plain(figsize=(13, 4))
    ax.text(0.2, 0.5, "small", fontsize=8)
    with pytest.raises(ValueError, match=r"\(2 problems\)") as exc:
        style.assert_readable(fig)
    assert "figure is 13 x 4 in" in str(exc.value) and "'small' is 8 pt" in str(exc.value)


# -- use() ------------------------------------------------------------------------------------------

def test_use_sets_the_style_and_is_idempotent():
    with matplotlib.rc_context():
        style.use()
        first = {k: matplotlib.rcParams[k] for k in style.rc_params()}
        style.use()
        assert {k: matplotlib.rcParams[k] for k in style.rc_params()} == first
        assert matplotlib.rcParams["svg.fonttype"] == "none"
        assert min(matplotlib.rcParams[k] for k in ("font.size", "xtick.labelsize", "ytick.labelsize",
                                                    "legend.fontsize", "axes.titlesize")) >= style.MIN_FONT_PT
        assert [c.lower() for c in matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]] == \
            [c.lower() for c in style.OKABE_ITO]


def test_svg_written_after_use_keeps_text_as_text(tmp_path):
    with matplotlib.rc_context():
        style.use()
        fig = chip.draw_mapping(device.spec_sheet("L4"))
        path = tmp_path / "mapping.svg"
        fig.savefig(path, format="svg")
    svg = path.read_text()
    assert len(re.findall(r"<text\b", svg)) >= 20
    assert "What you write vs what runs it" in svg
    assert "font-size" in svg and re.search(r"font[-:][^;\"]*(1[4-9]|[2-9]\d)(\.\d+)?px", svg)


def test_use_in_ipython_makes_inline_figures_svg_with_text():
    # a fresh interpreter: an IPython shell is a process-wide singleton
    import subprocess
    import sys

    code = """
import matplotlib; matplotlib.use("Agg")
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import matplotlib.pyplot as plt
from gpu_viz.figures import style
style.use(); style.use()
fig, ax = plt.subplots(); ax.set_title("a title")
data, _ = shell.display_formatter.format(fig)
print(sorted(data), data.get("image/svg+xml", "").count("<text"))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    formats, n_text = out.stdout.split("] ")
    assert formats == "['image/svg+xml', 'text/html', 'text/plain'" and int(n_text) >= 1


def test_subplots_refuses_a_figure_over_the_slide():
    with pytest.raises(ValueError, match=r"figsize \(13, 5\) in exceeds the slide's \(12.0, 5.5\) in"):
        style.subplots(figsize=(13, 5))


# -- what the figures say ---------------------------------------------------------------------------

@pytest.mark.parametrize("key", sorted(device.SPEC_SHEETS))
def test_chip_numbers_come_from_the_device(key):
    info = device.spec_sheet(key)
    fig = chip.draw_chip(info)
    t = texts(fig)
    assert f"GPU: {info.sm_count} streaming multiprocessors" in t
    assert f"L2 cache: {info.l2_bytes // 2**20} MiB" in t
    assert f"{info.peak_bandwidth_GBps:,.0f} GB/s" in t
    assert f"{info.mem_bus_bits}-bit bus" in t
    assert "Data: " in t and " ".join(info.source.split()) in t.replace("\n", " ")
    # one small square per SM
    assert sum(isinstance(p, Rectangle) for p in fig.axes[0].patches) == info.sm_count


def test_chip_with_measurements_needs_provenance():
    info = device.spec_sheet("H200")
    lat = {"L1": {"cycles": 33, "ns": 17}, "DRAM": {"cycles": 950, "ns": 480}}
    with pytest.raises(ValueError, match="provenance is required"):
        chip.draw_chip(info, latency=lat)
    fig = chip.draw_chip(info, latency=lat, bandwidth={"DRAM": 4100.0, "h2d": 53.2}, provenance="recorded on X, 2026")
    t = texts(fig)
    assert "PCIe link 53 GB/s host -> GPU (measured)" in t
    assert "950 cycles" in t and "480 ns" in t and "4,100 GB/s" in t and "measurements: recorded on X, 2026" in t
    assert style.check(fig) == []


@pytest.mark.parametrize("key", ["T4", "L4", "H200"])
def test_sm_draws_every_fp32_lane(key):
    info = device.spec_sheet(key)
    fig = chip.draw_sm(info)
    lanes = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert len(lanes) == info.fp32_cores_per_sm
    t = texts(fig)
    assert f"{info.max_threads_per_sm:,} ({info.max_threads_per_sm // 32} warps)" in t
    assert f"{info.regs_per_sm // 4:,} x 32-bit" in t
    assert " ".join(info.source.split()) in t.replace("\n", " ")


def test_mapping_has_the_decks_four_rows():
    info = device.spec_sheet("L4")
    t = texts(chip.draw_mapping(info))
    for logical, physical, how in chip.MAPPING:
        assert logical in t and physical in t and how in t.replace("\n", " ")
    assert "58 SMs, 89,088 threads resident at once" in t
    assert "128 lanes per SM" in t


def test_occupancy_refuses_more_panels_than_fit():
    info = device.spec_sheet("L4")
    tables = {f"k{i}": occupancy.table(info, occupancy.KernelResources(f"k{i}", 32)) for i in range(4)}
    with pytest.raises(ValueError, match="4 kernels do not fit one slide's figure"):
        memory_figures.plot_occupancy(tables, info, "calculator")


def test_staircase_labels_every_point_with_its_cycles():
    rec, label, minfo = _hardware()
    fig = memory_figures.plot_staircase(rec["latency"], minfo, label)
    shown = [t.get_text() for t in fig.axes[0].texts]
    assert shown == [f"{r['cycles_per_load']:,.0f}" for r in sorted(rec["latency"], key=lambda r: r["size_bytes"])]


def test_bad_info_is_named():
    with pytest.raises(TypeError, match="info must be a gpu_viz.device.DeviceInfo"):
        chip.draw_chip({"name": "L4"})


def test_hierarchy_table():
    rows = chip.hierarchy_rows(device.SPEC_SHEETS.values())
    md = chip.markdown_table(rows, chip.HIERARCHY_COLUMNS)
    assert md.count("\n") == len(rows) + 1
    assert "| NVIDIA H200 | sm_90 | 132 |" in md and "spec sheet" in md
    with pytest.raises(ValueError, match="rows is empty"):
        chip.markdown_table([])


def test_checker_catches_mathtext_exponents():
    """Bug class: log-axis ticks drawn as 10^k put the exponent at 70% size (13.1 CSS px at 14 pt);
    the checker reports them, and plain_log_ticks writes them as plain text."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.loglog([1e2, 1e6], [1e-7, 1e-3])
    for t in ax.get_xticklabels() + ax.get_yticklabels():
        t.set_fontsize(14)
    assert any("10^" in p or "mathdefault" in p for p in style.check(fig))
    style.plain_log_ticks(ax)
    for t in ax.get_xticklabels() + ax.get_yticklabels():
        t.set_fontsize(14)
    assert not [p for p in style.check(fig) if "mathdefault" in p or "10^" in p]
    plt.close(fig)


@pytest.mark.parametrize("threads", [256, 1024])
def test_scheduling_timeline_is_readable_at_slide_size(threads):
    """Bug class: notebook 09's timeline plot was drawn at 7-9 pt (9-12 CSS px on a slide)."""
    from gpu_viz.frames import scheduling
    from gpu_viz.lessons import SCHEDULING

    tr = SCHEDULING.trace(blocks=2048, threads=threads, spin_cycles=20000)
    for until in (None, float(tr["t_end"].max()) / 2):
        fig = scheduling.timeline_figure(tr, until_ns=until)
        assert style.check(fig) == []
        plt.close(fig)


@pytest.mark.parametrize("backend_env", ["Agg", "svg"])
def test_figures_reach_the_notebook_under_a_headless_backend(backend_env, monkeypatch, tmp_path):
    """A kernel started with MPLBACKEND=Agg (GPU job scripts export it) would print nothing on
    plt.show(): style.use() switches it to the inline backend, so the figure is an output."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "from gpu_viz.figures import style\n"
        "style.use()\n"
        "plt.plot([1, 2, 3]); plt.show()")]
    monkeypatch.setenv("MPLBACKEND", backend_env)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    kinds = [k for o in nb.cells[0].outputs for k in o.get("data", {})]
    assert "image/svg+xml" in kinds, f"no figure output under MPLBACKEND={backend_env}: {nb.cells[0].outputs}"


def _notebook10_pair(rows, label, op, fit):
    """Notebook 13's kernel-only / per-call pair: bar_chart into the caller's axes, laid out after."""
    from gpu_viz.rmsnorm import report

    timings = [t for t in ("kernel", "call") if any(r["timing"] == t and r["op"] == op for r in rows)]
    fig, axes = plt.subplots(1, len(timings), figsize=(12, 5.5), squeeze=False)
    for ax, tm in zip(axes[0], timings):
        report.bar_chart(rows, provenance=label, timing=tm, op=op, ax=ax)
    fig.tight_layout()
    if fit:
        report.fit_legends(fig)
    return fig


@pytest.mark.parametrize("op", ("rmsnorm_gate", "rmsnorm"))
def test_bar_chart_legend_covers_no_bar(op):
    """Bug class: the legend's headroom is estimated before the layout, so a tall bar under the
    upper-left legend could be covered once the caller lays the figure out (notebook 13's pair,
    on the newest committed record: its per-call chart had the 1024x8192 eager bar under the
    legend).  fit_legends after the layout clears it; a figure of bar_chart's own is cleared."""
    from gpu_viz.rmsnorm import plan as bplan, bench_record as brec
    from gpu_viz.rmsnorm import report

    rec = brec.newest_record()
    label = records.label(rec)
    rows = [r for r in rec["rows"] if (r["M"], r["N"]) in bplan.SEED_SHAPES and r["dtype"] == "float16"]
    fig = _notebook10_pair(rows, label, op, fit=True)
    assert [p for p in style.check(fig) if "legend" in p] == []
    for ax in fig.axes:
        assert style.legend_covers(ax, clearance_px=report.LEGEND_CLEARANCE_PX) == []
    plt.close(fig)
    for tm in ("kernel", "call"):
        fig = report.bar_chart(rows, provenance=label, timing=tm, op=op)
        assert [p for p in style.check(fig) if "legend" in p] == []
        plt.close(fig)


def test_check_reports_a_legend_over_a_bar():
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar([0, 1], [10.0, 2.0], label="a tall bar under the legend")
    ax.set_ylim(0, 10.5)
    ax.legend(loc="upper left", fontsize=14)
    fig.text(0.01, 0.01, "Data: made up", fontsize=14)
    assert any("the legend covers a bar (x=0.00, top=10)" in p for p in style.check(fig))
    plt.close(fig)


def test_wrapped_figure_text_leaves_no_lone_word_and_keeps_names_whole():
    """Bug class: a chart's provenance line under the axes ended on a line of its own reading
    "live)" (deck 13 slide 9, 08 speed-up slide 4), and "NVIDIA" / "H200" could part.  style.wrap
    wraps evenly: as many lines as a plain wrap, the last one never a lone short word, a name kept
    with what it names, every line within the width."""
    import textwrap

    labels = ["Data: recorded on NVIDIA H200, 2026-12-02, driver 580.159.04 (not live)",
              "Data: measured on NVIDIA L4 (sm_89) just now, 2026-12-03",
              "Data: CPU model, no GPU: computed in numpy, nothing was measured"]
    for text in labels:
        for width_in in [w / 10 for w in range(30, 121, 3)]:
            out = style.wrap(text, width_in).split("\n")
            chars = max(10, int(width_in * 72 / (0.55 * style.SMALL_PT)))
            assert len(out) == len(textwrap.wrap(text, chars)), (width_in, out)
            assert " ".join(out).split() == text.split()
            assert all(len(ln) <= chars for ln in out), (width_in, out)
            if len(out) > 1:
                assert len(out[-1].split()) > 1 or len(out[-1]) > 6, (width_in, out)
            assert not any(a.endswith("NVIDIA") for a in out[:-1]), (width_in, out)


def test_a_figure_fits_the_notebooks_output_width_and_keeps_its_size_in_a_deck():
    """Bug class: figures are drawn ~1,150 px wide and ran past JupyterLab's ~1,000 px output area,
    cutting legends and axes.  In a notebook a figure's HTML rendering scales down to the output
    width (max-width: 100%, as the players do); the deck keeps the drawn size (its slide-fit check
    measures the labels at that size).  The SVG is drawn once for both.  (A fresh interpreter: an
    IPython shell is a process-wide singleton.)"""
    import json
    import subprocess
    import sys

    code = """
import json
import matplotlib; matplotlib.use("Agg")
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import matplotlib.pyplot as plt
from matplotlib.backend_bases import FigureCanvasBase
import nbformat
from gpu_viz import slides
from gpu_viz.figures import style
style.use(); style.use()           # idempotent: no second wrapper round the first
fig, ax = plt.subplots(figsize=style.MAX_FIGSIZE_IN); ax.plot([0, 1], [1, 0])
calls, real = [], FigureCanvasBase.print_figure
FigureCanvasBase.print_figure = lambda self, *a, **k: calls.append(1) or real(self, *a, **k)
data, _ = shell.display_formatter.format(fig)
FigureCanvasBase.print_figure = real
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("fig")])
nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data=data)]
converted = slides.inline_svg(nb)
print(json.dumps({"calls": len(calls), "html": data["text/html"], "converted": converted,
                  "deck": nb.cells[0].outputs[0]["data"]["text/html"]}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["calls"] == 1, f"the SVG was drawn {r['calls']} times"
    assert 'style="max-width:100%;height:auto"' in r["html"] and r["html"].count("<svg") == 1
    assert "<?xml" not in r["html"]
    assert r["converted"] == 1 and r["deck"].startswith('<div class="gv-figure">') and "max-width:100%" not in r["deck"]
