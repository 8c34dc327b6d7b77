"""Notebook 13's section 6 helpers (gpu_viz.rmsnorm.report): the wide rows as the share of copy,
the per-call rows, batch invariance -- on the newest committed record, and on an older record
without those rows (a sentence, never a traceback).  CPU only."""
import re
from pathlib import Path

import nbformat
import pytest

from gpu_viz.measure import records
from gpu_viz.rmsnorm import bench as bm, plan as bplan, bench_record as brec, targets as tg, report as R

ROOT = Path(__file__).resolve().parent.parent
NB10 = ROOT / "notebooks" / "13_fused_rmsnorm_gate.ipynb"
RAW = re.compile(r"\[[-\d., ]*\]|\{'|\(\d+, \d+\)|\bNone\b|\d\.\d{4,}")


@pytest.fixture(scope="module")
def record():
    rec = brec.newest_record()
    if rec is None:
        pytest.skip("no committed full record")
    return rec


def _old(record, calls=True):
    """The record as one from before the wide, per-call and invariance rows: its main plan only
    (the first row of each key; ``calls=False``: no call timing at all)."""
    first = {}
    for r in record["rows"]:
        if (r["M"], r["N"]) in bplan.RECORD_SHAPES and (calls or r["timing"] != "call"):
            first.setdefault((r["op"], r["impl"], r["M"], r["N"], r["dtype"], r["timing"]), r)
    old = {k: v for k, v in record.items() if k != "batch_invariant"}
    old["rows"] = [r for r in first.values() if not r["impl"].endswith(("_grad", "_cupy", "_unplanned"))]
    return old


def test_wide_share_on_the_record(record):
    table, said = R.wide_share(record["rows"], record["copy_GBps"], records.label(record), record["skipped"])
    assert len(table.body) == 2 * len(bplan.WIDE_SHAPES)
    assert table.header[:2] == ["op", "M x N"] and "ours fp16" in table.header and "F.rms_norm" in table.header
    assert records.label(record) in table.caption
    text = table.plain() + "\n".join(said)
    assert not RAW.search(text), RAW.search(text)
    # every baseline the record has at a wide shape is a column; one it refused is said in words
    if any(s["impl"] == "liger" and s["N"] > bplan.LIGER_MAX_N for s in record["skipped"]):
        assert any(s.startswith("Liger refused") and "Triton" in s for s in said), said


def test_wide_share_of_an_older_record_is_a_sentence(record):
    table, said = R.wide_share(_old(record)["rows"], record["copy_GBps"], records.label(record))
    assert table is None and len(said) == 1 and "no wide rows" in said[0] and records.label(record) in said[0]


def test_wide_share_says_a_missing_liger_is_not_installed():
    rows = [{"op": "rmsnorm", "impl": "fused", "M": 1024, "N": 262144, "dtype": "float16", "timing": "kernel",
             "median_us": 300.0, "GBps": 3500.0}]
    skipped = [{"op": "rmsnorm", "impl": "liger", "M": 1024, "N": 262144, "dtype": "float16",
                "reason": "liger_kernel is not importable (ModuleNotFoundError: No module named 'liger_kernel')"}]
    table, said = R.wide_share(rows, 4000.0, "measured on X", skipped, shapes=((1024, 262144),))
    assert table.body == [["RMSNorm", "1024x262144", "87.5"]]
    assert "Liger is not installed here: no time at 1024x262144 (fp16)." in said
    assert any("Not measured" in s and "F.rms_norm" in s and "eager" in s for s in said)
    # a live run times one wide shape: the table shows that shape only
    assert R.wide_share(rows, 4000.0, "measured on X", skipped)[0].body == table.body


def test_wide_share_legend_explains_only_the_markers_its_cells_show():
    """Bug class: the long-rows caption explained "—" (not measured), "refused" and "n/a" whether
    or not a cell showed them.  Each legend entry appears exactly when a cell uses its marker."""
    def row(op, impl, dtype, N=262144):
        return {"op": op, "impl": impl, "M": 1024, "N": N, "dtype": dtype, "timing": "kernel",
                "median_us": 300.0, "GBps": 3000.0}
    shapes = ((1024, 131072), (1024, 262144))
    legend = {"—": "— not measured", "refused": "refused: the baseline raised there",
              "n/a": "n/a: no such baseline for the gate"}

    def markers(table):
        return {m for line in table.body for c in line[2:] for m in legend if c == m or m in c.split("/")}

    full = [row("rmsnorm", i, d, N) for i in ("fused", "native") for d in ("float16", "bfloat16")
            for _, N in shapes]
    gaps = full[:-1]   # F.rms_norm not measured at one shape in bf16: "75/—"
    gate = full + [row("rmsnorm_gate", "fused", d, N) for d in ("float16", "bfloat16") for _, N in shapes]
    # F.rms_norm measured at the shorter rows, refused at the longer ones
    refusing = [r for r in full if r["impl"] == "fused" or r["N"] == 131072]
    refused = [{"op": "rmsnorm", "impl": "native", "M": 1024, "N": 262144, "dtype": d,
                "reason": "raised RuntimeError: row too long"} for d in ("float16", "bfloat16")]
    seen = set()
    for rows, skipped in ((full, ()), (gaps, ()), (gate, ()), (refusing, refused)):
        table, _ = R.wide_share(rows, 4000.0, "measured on X", skipped, shapes=shapes)
        shown = markers(table)
        seen |= shown
        for m, words in legend.items():
            assert (words in table.caption) == (m in shown), (m, table.body, table.caption)
        assert table.caption.endswith(". Data: measured on X"), table.caption
    assert seen == set(legend), f"the cases must show every marker at least once: {seen}"


def test_wide_share_never_rounds_a_miss_up_to_the_target():
    """Ours' share is shown to a tenth and cut down: 89.96 % reads 89.9 (not 90.0 or 90, which
    read as the 90 % target met), 89.6 % reads 89.6, 100.04 % reads 100.0; baselines stay whole."""
    def row(impl, gbps):
        return {"op": "rmsnorm", "impl": impl, "M": 1024, "N": 262144, "dtype": "float16", "timing": "kernel",
                "median_us": 300.0, "GBps": gbps}
    for gbps, want in ((3598.4, "89.9"), (3584.0, "89.6"), (4001.6, "100.0")):
        table, _ = R.wide_share([row("fused", gbps), row("native", 2398.0)], 4000.0, "measured on X",
                                shapes=((1024, 262144),))
        assert table.body[0][2] == want and table.body[0][3] == "60", (gbps, table.body)
        assert "ours cut to a tenth, not rounded" in table.caption  # the reader is told so


def test_per_call_rows_keep_one_row_per_key_the_first(record):
    rows = R.per_call_rows(record["rows"])
    assert {(r["impl"], r["M"]) for r in rows} == {(i, M) for i in ("native", "fused", "native_grad", "fused_grad")
                                                  for M, _ in bplan.CALL_SHAPES}
    first = [r for r in record["rows"] if r["timing"] == "call" and r["op"] == "rmsnorm" and r["impl"] == "native"
             and (r["M"], r["N"], r["dtype"]) == (128, 4096, "float16")][0]
    assert next(r for r in rows if r["impl"] == "native" and r["M"] == 128) is first


def test_per_call_summary_and_chart(record):
    said = R.per_call_summary(record["rows"])
    assert len(said) in (2, 3) and said[0].startswith("No grad:") and said[1].startswith("Weight requires grad:")
    assert all(re.search(r"at \d+ of 11 sizes", s) for s in said[:2])
    assert len(said) == 2 or said[2].startswith("Noisy: ")
    assert R.kernel_vs_call(record["rows"]).startswith("At 128 x 4096, kernel only: ours ")
    from gpu_viz.figures import style

    fig = R.per_call_chart(record["rows"], provenance=records.label(record))
    assert style.check(fig) == []
    with pytest.raises(ValueError, match="no rmsnorm per-call rows"):
        R.per_call_chart(_old(record, calls=False)["rows"], provenance=records.label(record))
    assert R.per_call_summary(_old(record, calls=False)["rows"]) == []
    assert R.kernel_vs_call(_old(record, calls=False)["rows"]) is None
    # an older record timed 128, 512 and 1024 rows per call, without a grad-requiring weight
    older = R.per_call_summary(_old(record)["rows"])
    assert re.search(r"^No grad: .* at \d+ of 3 sizes", older[0]) and "weight that requires grad" in older[1]
    assert style.check(R.per_call_chart(_old(record)["rows"], provenance=records.label(record))) == []


def test_invariance_summary(record):
    said = R.invariance_summary(record["batch_invariant"])
    n = len(record["batch_invariant"]["checked"])
    assert said[0].startswith(f"{n} of {n} cases bit-identical") or not record["batch_invariant"]["ok"]
    assert "M = 1, 3, 64, 1000 against 4096" in "\n".join(said)
    assert "predates" in R.invariance_summary(None)[0]
    bad = R.invariance_summary({"ok": False, "checked": [
        {"op": "rmsnorm", "dtype": "float16", "N": 768, "M": [1, 3, 4096], "ok": False,
         "detail": "rows differ at M=[3]"}]})
    assert bad[0] == "0 of 1 cases bit-identical: 1 op x 1 dtype x 1 row length."
    assert bad[-1] == "Differs: RMSNorm fp16 N = 768 (rows differ at M = 3)."
    assert not RAW.search("\n".join(bad))


def _section_cells():
    nb = nbformat.read(NB10, as_version=4)
    return {c.id: c.source for c in nb.cells if c.cell_type == "code" and c.id.startswith("n10-more-")}


def test_notebook_section_on_an_older_record_prints_sentences(record, capsys, monkeypatch):
    """The display cells of section 6 on a record without the new rows: sentences, no traceback."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    old = _old(record, calls=False)
    shown = []
    ns = {"bm_report": R, "bm": bm, "plt": plt, "display": shown.append, "more_label": records.label(old),
          "more_rows": old["rows"], "more_skipped": old.get("skipped", []), "more_copy": old["copy_GBps"],
          "more_invariant": old.get("batch_invariant")}
    cells = _section_cells()
    for cid in ("n10-more-4", "n10-more-8", "n10-more-12"):
        exec(cells[cid], ns)
    out = capsys.readouterr().out
    assert not shown
    assert "no wide rows" in out and "no per-call rows" in out and "predates" in out
    assert out.count(records.label(old)) == 3


def test_the_launcher_line_says_how_ours_was_launched():
    from gpu_viz.rmsnorm import report

    assert "not in that run" in report.launcher_line(None)
    assert report.launcher_line("built: /x/y.so") == "These calls of ours went through the C++ launcher."
    line = report.launcher_line("unavailable: cannot open libcuda.so.1: no such file")
    assert "unavailable there" in line and "libcuda" not in line  # no raw error on a slide


# -- display names and layout of a rendered table / chart (notebook 13's slides) ---------------------

def test_rendered_tables_use_display_names_and_keep_the_cli_names(record):
    rows = [r for r in record["rows"] if (r["M"], r["N"]) in bplan.SEED_SHAPES and r["op"] == "rmsnorm"
            and r["dtype"] == "float16"]
    t = R.table(rows, provenance=records.label(record))
    import html as _html

    html = _html.unescape(t.html()).replace("\u00a0", " ").replace("\u2060", "")
    for code, shown in (("native µs", "F.rms_norm µs"), ("fused µs", "ours µs"), ("liger µs", "Liger µs")):
        assert f">{shown}<" in html and f">{code}<" not in html
        assert code in t.markdown()  # the CLI's tables keep the provider names they are asked by
    assert "the deck's 4-phase kernel" in html and "deck4phase" not in html
    assert ">RMSNorm<" in html and ">fp16<" in html and ">rmsnorm<" not in html


def test_rendered_tables_never_wrap_a_value_from_its_ratio_nor_a_word_at_its_hyphen(record):
    """Bug class: at 1280x720 a table cell wrapped "63.69" / "(14.6x)", headers split at their
    hyphens ("write-" / "up fused µs", "the deck's 4-" / "phase kernel µs"), a caption split a
    date ("2026-" / "12-02") and a test id ("float16-" / "1024-768").  In the HTML a number and the
    short bracket after it share a no-break space, and a hyphen inside a word, date or id is
    followed by a word joiner, in every header, cell and caption; markdown and plain keep the text."""
    rows = [r for r in record["rows"] if (r["M"], r["N"]) in bplan.SEED_SHAPES and r["op"] == "rmsnorm"
            and r["dtype"] == "float16"]
    label = records.label(record)
    for t in (R.table(rows, provenance=label), R.seed_comparison(record["rows"], label),
              R.Table(["GPU test", "result"], [["test_forward_fixed_shapes[True-float16-1024-768]", "passed"]],
                      "recorded on NVIDIA H200, 2026-12-02 (not live)")):
        html = t.html()
        cells = [c for _, c in re.findall(r"<(th|td|caption)\b[^>]*>(.*?)</\1>", html)]
        assert cells
        for c in cells:
            assert not re.search(r"\w-(?!\u2060)\w", c), c          # no breakable hyphen inside a word
            assert not re.search(r"\d \(", c), c                     # "63.69 (14.6x)" stays one unit
        assert not re.search("[\u2060\u00a0]", t.markdown() + t.plain())  # the CLI's text is untouched
    html = R.table(rows, provenance=label).html()
    assert re.search(r"\d\.\d\d\u00a0\(\d+\.\dx\)", html)        # a value and its ratio
    assert "4-\u2060phase" in html and "-\u206012-\u2060" in html    # header, date in the caption
    assert "write-\u2060up" in R.seed_comparison(record["rows"], label).html()


def test_checks_table_reads_as_text():
    t = R.checks_table([("rmsnorm fused 16384x32768 float16: >= 90% of copy bandwidth", False,
                         "3,713 GB/s = 87.3% of copy 4,251 GB/s")])
    html = t.html()
    assert "text-align:right" not in html  # a column of sentences is left-aligned
    assert "≥ 90" in html and ">=" not in html
    assert "4,251\u00a0GB/s" in html and "3,713\u00a0GB/s" in html  # a number keeps its unit on its line


def test_number_columns_align_right_and_word_columns_left():
    t = R.Table(["op", "N", "share"], [["RMSNorm", "4,096", "87"], ["RMSNorm + gate", "768", "n/a"]])
    heads = re.findall(r"<th style='text-align:(\w+)", t.html())
    assert heads == ["left", "right", "right"]


def test_bar_chart_legend_and_title_in_display_words(record):
    rows = [r for r in record["rows"] if (r["M"], r["N"]) in bplan.SEED_SHAPES and r["op"] == "rmsnorm_gate"]
    fig = R.bar_chart(rows, provenance=records.label(record), timing="call", op="rmsnorm_gate", dtype="float16")
    ax = fig.axes[0]
    labels = [" ".join(t.get_text().split()) for t in ax.get_legend().get_texts()]
    assert "ours" in labels and "torch.compile" in labels and "fused" not in labels
    assert all("_" not in lab for lab in labels), labels
    assert ax.get_title() == "RMSNorm + gate, per call" and ax.get_ylabel() == "median µs per call"
    fig = R.bar_chart(rows, provenance=records.label(record), timing="kernel", op="rmsnorm_gate", dtype="float16")
    assert fig.axes[0].get_ylabel() == "median µs, kernel only"


def test_bar_chart_shape_labels_never_split_a_shape(record):
    """Bug class: the tick labels drew a shape over two lines as "16384 x" / "4096" (08 speed-up,
    13's bandwidth and per-op charts).  A shape is one token, "16384×4096", on every chart; the
    op above it and the dtype below it when they vary."""
    for op, shapes in (("rmsnorm_gate", bplan.SEED_SHAPES), (None, tg.BANDWIDTH_SHAPES)):
        rows = [r for r in record["rows"] if (r["M"], r["N"]) in shapes]
        fig = R.bar_chart(rows, provenance=records.label(record), timing="kernel", op=op, dtype="float16")
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        assert ticks and all(re.search(r"(^|\n)\d+×\d+$", t) for t in ticks), ticks
        assert not any(" x" in t or "x\n" in t for t in ticks), ticks
    assert R.shape_words(16384, 4096) == "16384×4096"


def test_nb10_slides_name_what_they_show():
    """Items an instructor caught: titles true in CPU mode, the copy line a reference, the launcher."""
    nb = nbformat.read(str(NB10), as_version=4)
    # the slides' words: every cell and the speaker notes each keeps in its metadata
    text = "\n".join(c.source + "\n" + c.metadata.get("speaker_notes", "") for c in nb.cells)
    assert "measured here" not in "\n".join(c.source for c in nb.cells if c.source.startswith("###"))
    assert "cannot beat a copy --" in text and "the measurement wins" in text
    assert "launches through ctypes" not in text and "reads the record's launcher field" in text
    assert "about 1 GiB of x per call" not in text and "0.5 GiB at 2048 x 131072" in text
    assert "warp-per-row for small N" not in text


def test_wide_share_says_one_refusal_once_for_every_shape_and_dtype():
    """Bug class: one sentence per refused (shape, dtype) made the slide taller than the screen;
    a provider's one message (its row length read as N) is said once, with the shapes and dtypes."""
    rows, skipped = [], []
    for M, N in ((2048, 131072), (1024, 262144)):
        for dt in ("float16", "bfloat16", "float32"):
            rows.append({"op": "rmsnorm", "impl": "fused", "M": M, "N": N, "dtype": dt, "timing": "kernel",
                         "median_us": 300.0, "GBps": 3500.0})
            skipped.append({"op": "rmsnorm", "impl": "liger", "M": M, "N": N, "dtype": dt,
                            "reason": f"raised RuntimeError: Cannot launch Triton kernel since n = {N} exceeds "
                                      f"the recommended Triton blocksize = 65536."})
    table, said = R.wide_share(rows, 4000.0, "measured on X", skipped, shapes=((2048, 131072), (1024, 262144)))
    assert said[1:] == ["Liger refused 2048x131072 (fp16/bf16/fp32), 1024x262144 (fp16/bf16/fp32): \u201cCannot launch "
                    "Triton kernel since n = N exceeds the recommended Triton blocksize = 65536.\u201d (N: the row "
                    "length)."], said
    assert [line[1] for line in table.body] == ["2048x131072", "1024x262144"]
    # with a Liger column (measured at a shorter row), its refused shapes read "refused", not "not measured"
    liger = [dict(r, impl="liger", M=8192, N=65536) for r in rows[:1]] + [dict(r, M=8192, N=65536) for r in rows[:1]]
    table, _ = R.wide_share(rows + liger, 4000.0, "measured on X", skipped,
                            shapes=((8192, 65536), (2048, 131072), (1024, 262144)))
    assert table.header[-1] == "Liger" and [line[-1] for line in table.body] == ["88/—/—", "refused", "refused"]
    assert "refused: the baseline raised" in table.caption


def test_per_call_summary_says_when_the_host_was_noisy():
    """Both providers jumping by 1.4x or more across sizes whose kernels differ by a few µs is the
    host's state, said beside the counts; a steady run says nothing of it."""
    def rows(ours, native):
        return [dict(op="rmsnorm", impl=i, M=M, N=4096, dtype="float16", timing="call", median_us=v)
                for i, vals in (("fused", ours), ("native", native)) for M, v in zip((1, 32, 1024), vals)]
    steady = R.per_call_summary(rows((14.0, 15.0, 15.5), (19.0, 19.5, 20.0)))
    assert len(steady) == 2 and steady[0].startswith("No grad: ours no slower than F.rms_norm at 3 of 3")
    noisy = R.per_call_summary(rows((14.0, 23.2, 15.0), (19.0, 18.9, 36.0)))
    assert noisy[0].startswith("No grad: ours no slower than F.rms_norm at 2 of 3")
    assert noisy[2] == ("Noisy: 14.0-23.2 µs (ours), 18.9-36.0 µs (F.rms_norm) over these sizes: the host varied "
                        "between timing windows; compare where both are low.")
    assert len(R.per_call_summary(rows((14.0, 23.2, 15.0), (19.0, 19.5, 20.0)))) == 2  # only ours: not the host
    # rows timed in shared interleaved rounds: each size's ratio holds, and the sentence says so
    together = [dict(r, rounds=10) for r in rows((14.0, 23.2, 15.0), (19.0, 28.9, 36.0))]
    assert R.per_call_summary(together)[2].endswith(
        "the host varied between sizes; at each size both shared their timing rounds.")


def test_call_timing_caveat_marks_records_timed_before_idle_start_windows():
    """Records made before each per-call window started on an idle GPU carry a caution beside
    their per-call numbers (notebook 13 prints it); newer records, records without per-call rows
    and no record carry none.  The committed record nvidia-h200-2026-12-03.2-fused.json is one of the older kind."""
    from gpu_viz.rmsnorm import bench as bm, report

    call = {"op": "rmsnorm", "M": 1024, "N": 4096, "dtype": "float16", "impl": "native", "timing": "call",
            "median_us": 10.0}
    assert report.call_timing_caveat({"rows": [call]}).startswith("Caution, per call:")
    assert report.call_timing_caveat({"rows": [call], "call_windows": bm.CALL_WINDOWS}) is None
    assert report.call_timing_caveat({"rows": [dict(call, timing="kernel")]}) is None
    assert report.call_timing_caveat(None) is None
    import json
    from pathlib import Path

    old = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results"
                      / "nvidia-h200-2026-12-03.2-fused.json").read_text())
    assert "call_windows" not in old and report.call_timing_caveat(old)
