"""`gpu-viz slides`: vendoring, static players, widget-state pruning, offline decks, the index.

The browser checks of the same decks are in tests/test_browser.py; the builds are shared
(tests/conftest_slides.py).
"""
import json
import re
import shutil

import nbformat
import pytest
from pathlib import Path
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from conftest_slides import COURSE_NOTEBOOKS, DATA
from gpu_viz import backend, cli, slides
from gpu_viz import deck_vendor, slides_cli

VIEW = slides.WIDGET_VIEW_MIME
STATE = slides.WIDGET_STATE_MIME


def _player_output(model_id="m-box"):
    return new_output("display_data", data={"text/plain": "<Animation>", "text/html": "<div class='gpu-viz-player'>",
                                             VIEW: {"version_major": 2, "version_minor": 0, "model_id": model_id}},
                      metadata={"gpu_viz": {"player": True, "frames": 3}})


def _widget_output(model_id):
    return new_output("display_data", data={"text/plain": "IntSlider", VIEW: {
        "version_major": 2, "version_minor": 0, "model_id": model_id}})


def _model(name, **state):
    return {"model_name": name, "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
            "state": state}


def _nb_with_widgets():
    nb = new_notebook(cells=[new_code_cell("anim.show()", outputs=[_player_output("m-box")]),
                             new_code_cell("slider", outputs=[_widget_output("m-slider")])])
    nb.metadata["widgets"] = {STATE: {"version_major": 2, "version_minor": 0, "state": {
        "m-box": _model("VBoxModel", children=["IPY_MODEL_m-img"], layout="IPY_MODEL_m-box-layout"),
        "m-img": _model("ImageModel", value="...png..."),
        "m-box-layout": _model("LayoutModel"),
        "m-slider": _model("IntSliderModel", value=7, layout="IPY_MODEL_m-slider-layout",
                           style="IPY_MODEL_m-slider-style"),
        "m-slider-layout": _model("LayoutModel"),
        "m-slider-style": _model("SliderStyleModel"),
        "m-orphan": _model("IntSliderModel", value=1),
    }}}
    return nb


# ----------------------------------------------------------------------------- units
def test_static_players_drop_only_the_player_widget_view():
    nb = _nb_with_widgets()
    assert slides.static_players(nb) == 1
    player, slider = nb.cells[0].outputs[0], nb.cells[1].outputs[0]
    assert VIEW not in player.data and "text/html" in player.data
    assert VIEW in slider.data  # other widgets still render from the stored state


def test_static_player_without_html_is_an_error():
    nb = _nb_with_widgets()
    del nb.cells[0].outputs[0].data["text/html"]
    with pytest.raises(slides.SlidesError, match="cell 0.*no text/html"):
        slides.static_players(nb)


def test_prune_widget_state_keeps_what_remaining_views_reference():
    nb = _nb_with_widgets()
    slides.static_players(nb)
    removed = slides.prune_widget_state(nb)
    kept = set(nb.metadata["widgets"][STATE]["state"])
    assert kept == {"m-slider", "m-slider-layout", "m-slider-style"}
    assert removed == 4


def test_prune_widget_state_drops_metadata_when_no_view_left():
    nb = _nb_with_widgets()
    nb.cells = nb.cells[:1]
    slides.static_players(nb)
    slides.prune_widget_state(nb)
    assert "widgets" not in nb.metadata


def test_drop_colab_badges():
    nb = new_notebook(cells=[new_markdown_cell(
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/x/y/blob/main/notebooks/01_a.ipynb)\n\n# Title")])
    assert slides.drop_colab_badges(nb) == 1
    assert nb.cells[0].source == "# Title"


def test_notebook_title_and_find_notebooks(tmp_path):
    for name in ("01_intro.ipynb", "02_warps.ipynb", "05_block_1024_cap.ipynb", "10_rmsnorm.ipynb", "scratch.ipynb"):
        nbformat.write(new_notebook(cells=[new_markdown_cell("[![b](x)](y)\n\n# The *title* here")]),
                       str(tmp_path / name))
    names = [p.name for p in slides.find_notebooks(tmp_path)]
    assert names == ["01_intro.ipynb", "02_warps.ipynb", "05_block_1024_cap.ipynb", "10_rmsnorm.ipynb"]
    assert [p.name for p in slides.find_notebooks(tmp_path, "02*,rmsnorm")] == ["02_warps.ipynb", "10_rmsnorm.ipynb"]
    # a number is the notebook's number, not a substring ("10" is not the 10 of "1024")
    assert [p.name for p in slides.find_notebooks(tmp_path, "10")] == ["10_rmsnorm.ipynb"]
    assert [p.name for p in slides.find_notebooks(tmp_path, "5,1")] == ["01_intro.ipynb", "05_block_1024_cap.ipynb"]
    assert [p.name for p in slides.find_notebooks(tmp_path, "1024")] == []
    assert [p.name for p in slides.find_notebooks(tmp_path, "*1024*")] == ["05_block_1024_cap.ipynb"]
    for empty in ("", ",", " , "):  # no pattern at all: an error, not every deck
        with pytest.raises(slides.SlidesError, match="--only needs at least one pattern"):
            slides.find_notebooks(tmp_path, empty)
    nb = nbformat.read(str(tmp_path / "01_intro.ipynb"), as_version=4)
    assert slides.notebook_title(nb, "fallback") == "The *title* here"
    assert slides.notebook_title(new_notebook(), "fallback") == "fallback"


def test_vendor_from_incomplete_folder_names_what_is_missing(tmp_path):
    (tmp_path / "src" / "requirejs").mkdir(parents=True)
    (tmp_path / "src" / "requirejs" / "require.js").write_text("//")
    with pytest.raises(slides.SlidesError, match=r"--vendor-from .*missing.*reveal\.js/dist/reveal\.js"):
        deck_vendor.vendor(tmp_path / "vendor", vendor_from=tmp_path / "src")


def test_vendor_without_npm_or_node_modules_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(deck_vendor.shutil, "which", lambda name: None)
    with pytest.raises(slides.SlidesError, match="npm is not installed.*--vendor-from"):
        deck_vendor.vendor(tmp_path / "vendor", slides_dir=tmp_path)


def test_cli_with_no_notebooks_exits_2(tmp_path, capsys):
    assert cli.main(["slides", "--notebooks", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "no notebook matches" in capsys.readouterr().err


def test_check_offline_rejects_remote_scripts_but_not_links():
    slides._check_offline('<a href="https://example.org/x">link</a>', "ok.html")
    with pytest.raises(slides.SlidesError, match="remote resource"):
        slides._check_offline('<script src="https://cdn.example.org/reveal.js"></script>', "bad.html")
    with pytest.raises(slides.SlidesError, match="remote resource"):
        slides._check_offline("<script type=module>import mermaid from 'https://cdn.x/m.mjs'</script>", "bad.html")


def test_package_json_pins_exact_versions_and_lockfile_matches():
    pkg = json.loads((slides.SLIDES_DIR / "package.json").read_text())
    lock = json.loads((slides.SLIDES_DIR / "package-lock.json").read_text())
    assert set(pkg["dependencies"]) == set(deck_vendor.VENDOR_FILES)
    for name, version in pkg["dependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} must be pinned exactly, got {version!r}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


# ----------------------------------------------------------------------------- the self-test build
def test_selftest_deck_builds_offline(selftest_slides):
    result = selftest_slides
    assert result.ok, [d.error for d in result.decks]
    deck = result.deck("99_slides_selftest")
    assert deck.html.is_file() and deck.html.name == "99_slides_selftest.slides.html"
    assert deck_vendor.vendor_complete(result.out_dir / "vendor")
    page = deck.html.read_text()
    # every script and stylesheet is local (vendor/ or inline)
    loads = re.findall(r"""<(?:script|link)[^>]*(?:src|href)\s*=\s*["']([^"']+)""", page)
    assert loads and all(u.startswith("vendor/") for u in loads), loads
    assert "mermaid" not in page.split("<body", 1)[0].lower() or "import mermaid" not in page
    assert "colab-badge" not in page
    for url in deck_vendor.VENDOR_URLS.values():
        assert (result.out_dir / url.split("?")[0]).exists(), url


def test_selftest_deck_content(selftest_slides):
    deck = selftest_slides.deck("99_slides_selftest")
    page = deck.html.read_text()
    assert page.count('class="gpu-viz-player"') == 1
    assert page.count('<aside class="notes">') == 2
    assert "this cell is skipped on slides" not in page        # slide_type "skip"
    assert "render_frames(draw" not in page                    # hide-input tag: code hidden, player kept
    # the IntSlider renders from the embedded widget state; the player's models were pruned
    state = json.loads(re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>',
                                 page, re.S).group(1))
    names = sorted(m["model_name"] for m in state["state"].values())
    assert "IntSliderModel" in names and "ImageModel" not in names and "PlayModel" not in names
    assert page.count('<script type="application/vnd.jupyter.widget-view+json">') == 1


def test_selftest_index_and_manifest(selftest_slides):
    result = selftest_slides
    index = result.index.read_text()
    assert 'href="99_slides_selftest.slides.html"' in index and "Slides self-test" in index
    deck = result.deck("99_slides_selftest")
    assert "CPU mode" in index and deck.date[:4] in index  # the fixture builds with force_cpu
    manifest = json.loads((result.out_dir / "manifest.json").read_text())
    assert manifest["decks"][0]["name"] == "99_slides_selftest" and manifest["decks"][0]["error"] == ""
    executed = nbformat.read(str(deck.executed), as_version=4)
    assert executed.metadata[slides.BUILD_METADATA_KEY]["mode"] == "cpu"
    assert all(c.outputs for c in executed.cells if c.cell_type == "code" and "print" in c.source)
    banner = "".join(o.get("text", "") for o in executed.cells[2].outputs)
    assert "CPU MODE -- CPU mode was chosen on purpose" in " ".join(banner.split())  # env reached the kernel
    assert backend.FORCE_CPU_ENV not in banner  # the variable's name is for the doctor, not a slide


def test_no_execute_renders_executed_copies(selftest_slides, tmp_path):
    out = tmp_path / "again"
    result = slides.build(out_dir=out, notebooks_dir=DATA, execute=False,
                          executed_dir=selftest_slides.executed_dir,
                          vendor_from=selftest_slides.out_dir / "vendor", log=lambda *a: None)
    assert result.vendored == "copied" and result.ok
    assert (out / "99_slides_selftest.slides.html").is_file()
    assert result.deck("99_slides_selftest").mode == selftest_slides.deck("99_slides_selftest").mode


def test_no_execute_without_executed_copy_is_a_clear_error(tmp_path, selftest_slides):
    with pytest.raises(slides.SlidesError, match="--no-execute: no executed copy of 99_slides_selftest"):
        slides.build(out_dir=tmp_path / "o", notebooks_dir=DATA, execute=False, executed_dir=tmp_path / "none",
                     vendor_from=selftest_slides.out_dir / "vendor", log=lambda *a: None)


def test_failing_notebook_is_reported_and_cli_exits_1(tmp_path, selftest_slides, capsys):
    nbdir = tmp_path / "nbs"
    nbdir.mkdir()
    nb = new_notebook(cells=[new_markdown_cell("# Broken", metadata={"slideshow": {"slide_type": "slide"}}),
                             new_code_cell("raise ValueError('learner typo')",
                                           metadata={"slideshow": {"slide_type": "-"}})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(nbdir / "01_broken.ipynb"))
    shutil.copytree(selftest_slides.out_dir / "vendor", tmp_path / "out" / "vendor")
    rc = cli.main(["slides", "--notebooks", str(nbdir), "--out", str(tmp_path / "out"), "--timeout", "60"])
    assert rc == 1
    assert "01_broken FAILED" in capsys.readouterr().err and "learner typo" in (tmp_path / "out" / "manifest.json").read_text()
    assert "FAILED" in (tmp_path / "out" / "index.html").read_text()
    assert (tmp_path / "out" / "01_broken.slides.html").is_file()  # the deck shows the error cell


# ----------------------------------------------------------------------------- the course decks
@pytest.mark.slow
@pytest.mark.parametrize("name", COURSE_NOTEBOOKS)
def test_course_notebook_builds(built_slides, name):
    deck = built_slides.deck(name)
    assert deck.ok, f"{name}: {deck.error}"
    assert deck.html.stat().st_size > 0
    assert f'href="{deck.html.name}"' in built_slides.index.read_text()


@pytest.mark.gpu
def test_selftest_deck_built_live_on_the_gpu(tmp_path, selftest_slides):
    """On a GPU machine the build executes live and the index names the GPU."""
    result = slides.build(out_dir=tmp_path / "gpu", notebooks_dir=DATA, vendor_from=selftest_slides.out_dir / "vendor",
                          timeout=300, log=lambda *a: None)
    deck = result.deck("99_slides_selftest")
    assert deck.ok, deck.error
    name = backend.detect().device_name
    assert deck.mode == "gpu" and deck.gpu == name
    assert f"GPU: {name}" in result.index.read_text()
    executed = nbformat.read(str(deck.executed), as_version=4)
    assert "GPU mode:" in "".join(o.get("text", "") for o in executed.cells[2].outputs)
    assert "measured on" in deck.html.read_text()  # the player's provenance is the live label


def test_vendor_reuses_a_carried_build_vendor_without_npm(tmp_path, monkeypatch, selftest_slides):
    """The GPU machine has no npm: a complete slides/build/vendor carried there is copied instead."""
    slides_dir = tmp_path / "slides"
    slides_dir.mkdir()
    shutil.copy(slides.SLIDES_DIR / "package.json", slides_dir / "package.json")
    shutil.copytree(selftest_slides.out_dir / "vendor", slides_dir / "build" / "vendor")
    monkeypatch.setattr(deck_vendor.shutil, "which", lambda name: None)
    assert deck_vendor.vendor(tmp_path / "out" / "vendor", slides_dir=slides_dir) == "copied"
    assert deck_vendor.vendor_complete(tmp_path / "out" / "vendor")
    # a carried vendor/ from other pinned versions is not reused
    stamp = slides_dir / "build" / "vendor" / deck_vendor.VENDOR_STAMP
    stamp.write_text(json.dumps({"packages": {"reveal.js": "0.0.1"}}))
    with pytest.raises(slides.SlidesError, match="npm is not installed"):
        deck_vendor.vendor(tmp_path / "out2" / "vendor", slides_dir=slides_dir)


def test_vendor_stamp_records_the_pinned_versions(selftest_slides):
    stamp = json.loads((selftest_slides.out_dir / "vendor" / deck_vendor.VENDOR_STAMP).read_text())
    pins = json.loads((slides.SLIDES_DIR / "package.json").read_text())["dependencies"]
    assert stamp["packages"] == pins


def test_cli_vendor_only(tmp_path, selftest_slides, capsys):
    rc = cli.main(["slides", "--vendor-only", "--out", str(tmp_path), "--vendor-from",
                   str(selftest_slides.out_dir / "vendor")])
    assert rc == 0 and deck_vendor.vendor_complete(tmp_path / "vendor")
    assert not list(tmp_path.glob("*.html"))


# ----------------------------------------------------------------------------- CLI argument and output-folder errors
@pytest.mark.parametrize("option", ["--jobs", "--timeout"])
@pytest.mark.parametrize("value", ["0", "-1", "-5", "x", "1.5"])
def test_cli_rejects_a_count_below_one_naming_the_option(tmp_path, capsys, option, value):
    """Bug class: a count option taking nonsense silently.  argparse exits 2 naming the option."""
    with pytest.raises(SystemExit) as info:
        cli.main(["slides", "--notebooks", str(tmp_path), "--out", str(tmp_path / "out"), option, value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and "Traceback" not in err


def test_cli_accepts_a_count_of_one(tmp_path, capsys):
    # past argparse: fails later only because the folder holds no notebook
    assert cli.main(["slides", "--notebooks", str(tmp_path), "--out", str(tmp_path / "out"),
                     "--jobs", "1", "--timeout", "1"]) == 2
    assert "no notebook matches" in capsys.readouterr().err


def _unwritable_outs(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    return ["/proc/forbidden", str(a_file), str(a_file / "sub")]


@pytest.mark.parametrize("vendor_only", [False, True])
def test_cli_unusable_out_folder_is_a_clear_error_naming_out(tmp_path, capsys, vendor_only):
    """Bug class: an OSError from the output folder escaping as a traceback.  Exit 2, naming --out."""
    for out in _unwritable_outs(tmp_path):
        args = ["slides", "--notebooks", str(DATA), "--out", out] + (["--vendor-only"] if vendor_only else [])
        assert cli.main(args) == 2, out
        err = capsys.readouterr().err
        assert "--out" in err and out in err and "Traceback" not in err, err


def test_cli_os_error_while_building_is_a_clear_error(tmp_path, capsys, monkeypatch):
    """An OSError raised later in the build (a file in OUT cannot be written) exits 2 too."""
    out = tmp_path / "out"

    def failing_build(**kwargs):
        raise PermissionError(13, "Permission denied", str(out / "index.html"))

    monkeypatch.setattr(slides_cli, "build", failing_build)
    assert cli.main(["slides", "--notebooks", str(DATA), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "Permission denied" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- kernel log noise
def test_executing_a_notebook_prints_no_kernel_warning_and_keeps_errors(tmp_path, capfd):
    """Bug class: kernel start-up log lines (e.g. "[IPKernelApp] WARNING | Kernel is running over TCP
    without encryption") printed once per notebook by `make slides`.  The kernel's own stderr reaches
    this process's fd 2; it must carry no such line -- while a failing cell is still reported."""
    src = tmp_path / "01_t.ipynb"
    nb = new_notebook(cells=[new_code_cell("print('ok')"), new_code_cell("1/0")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(src))
    info = slides.execute_notebook(src, tmp_path / "out" / "01_t.ipynb", timeout=120)
    err = capfd.readouterr().err
    assert "without encryption" not in err, err
    assert not re.search(r"\[IPKernelApp\] (WARNING|ERROR)", err), err
    assert "ZeroDivisionError" in info["error"], "a real error in a cell must still be reported"


def test_building_some_decks_keeps_the_others_in_the_index(tmp_path, selftest_slides):
    """`gpu-viz slides --only X` into a folder with an earlier build: the index and the manifest
    still list every deck whose page is there (each with its own mode and date), X once."""
    nbdir, out = tmp_path / "nbs", tmp_path / "out"
    nbdir.mkdir()
    for name, title in (("01_first", "First"), ("02_second", "Second")):
        nb = new_notebook(cells=[new_markdown_cell(f"# {title}", metadata={"slideshow": {"slide_type": "slide"}}),
                                 new_code_cell("print(1)", metadata={"slideshow": {"slide_type": "-"}})])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, str(nbdir / f"{name}.ipynb"))
    kw = dict(out_dir=out, notebooks_dir=nbdir, vendor_from=selftest_slides.out_dir / "vendor", timeout=60,
              force_cpu=True, log=lambda *a: None)
    slides.build(only="01", **kw)
    second = slides.build(only="02", **kw)
    assert [d.name for d in second.decks] == ["02_second"]  # what this build made
    listed = lambda: [d["name"] for d in json.loads((out / "manifest.json").read_text())["decks"]]  # noqa: E731
    assert listed() == ["01_first", "02_second"]
    index = (out / "index.html").read_text()
    assert 'href="01_first.slides.html"' in index and 'href="02_second.slides.html"' in index
    slides.build(only="01", **kw)
    assert listed() == ["01_first", "02_second"]  # rebuilt, listed once
    (out / "02_second.slides.html").unlink()  # a page gone: no dead link in the index
    slides.build(only="01", **kw)
    assert listed() == ["01_first"] and "02_second" not in (out / "index.html").read_text()


def test_cli_builds_decks_and_says_pdfs_were_skipped_without_chromium(selftest_slides, tmp_path, capsys, monkeypatch):
    """No Chromium: the decks are still built (exit 0) and the build says the PDFs were skipped and why."""
    from gpu_viz import pdf

    monkeypatch.setattr(pdf, "chromium_path", lambda: None)
    rc = cli.main(["slides", "--notebooks", str(DATA), "--out", str(tmp_path / "out"), "--no-execute",
                   "--executed-dir", str(selftest_slides.executed_dir),
                   "--vendor-from", str(selftest_slides.out_dir / "vendor")])
    err = capsys.readouterr().err
    assert rc == 0 and (tmp_path / "out" / "99_slides_selftest.slides.html").is_file()
    assert "PDFs skipped" in err and "Chromium" in err
    assert not list((tmp_path / "out").glob("*.pdf"))


def test_figure_outputs_become_inline_svg_in_decks():
    """Bug class: nbconvert renders image/svg+xml as an <img>, a bitmap to the browser, so a figure's
    labels could not be measured (or read by a screen reader).  The deck gets the <svg> inline."""
    nb = new_notebook(cells=[new_code_cell("plot()", metadata={"slideshow": {"slide_type": "-"}})])
    svg = ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"'
           ' "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg width="864pt" height="396pt"><text>L2</text></svg>')
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={"image/svg+xml": svg, "text/plain": "<Figure>"})]
    assert slides.inline_svg(nb) == 1
    data = nb.cells[0].outputs[0]["data"]
    assert set(data) == {"text/html"}
    assert data["text/html"].startswith('<div class="gv-figure"><svg width="864pt"') and "<?xml" not in data["text/html"]
    assert slides.inline_svg(nb) == 0   # nothing left to convert


def test_a_print_split_across_flushes_is_one_output_block():
    """A kernel may send one printed paragraph as several stream messages ('a' then '\\nb'): the
    deck shows them as one block, not two with a blank line between them."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('first'); print('second')")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="first line"),
                    nbformat.v4.new_output("stream", name="stdout", text="\nsecond line\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), cell]
    body, _ = slides.exporter().from_notebook_node(nb)
    assert "first line\nsecond line" in body, "the two stream messages were not merged into one block"


def test_static_players_drop_the_live_twin_and_keep_the_static_player():
    """Animation.show() writes two outputs: the static player, then its live twin; a deck keeps the first."""
    from gpu_viz.widgets import Animation, Frame

    anim = Animation([Frame("<svg>a</svg>"), Frame("<svg>b</svg>")], title="t", provenance="p")
    data, meta = anim._bundle("gvl0")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("anim.show()")
    cell.outputs = [nbformat.v4.new_output("display_data", data=data, metadata=meta),
                    nbformat.v4.new_output("display_data", metadata={"gpu_viz": {"live": True}}, data={
                        "text/plain": "<live player>", slides.WIDGET_VIEW_MIME: {"model_id": "m1"}}),
                    nbformat.v4.new_output("stream", text="after\n")]
    nb.cells = [cell]
    assert slides.static_players(nb) == 1
    kinds = [(o.output_type, sorted(o.get("data", {}))) for o in nb.cells[0].outputs]
    assert kinds == [("display_data", ["text/html", "text/plain"]), ("stream", [])]


def test_index_says_which_cpu_decks_show_records(tmp_path):
    """Bug class: the index labelled every deck built in CPU mode "model traces, nothing timed",
    the measured chapters too (their notebooks call gpu_viz.banner(recorded=True) and show
    committed GPU records).  Each CPU deck gets the label its own banner call implies; a GPU deck
    its GPU; an unreadable source the traces label."""
    decks = []
    for name, banner in (("01_traces", "gpu_viz.banner();"), ("10_measured", "gpu_viz.banner(recorded=True);")):
        src = tmp_path / f"{name}.ipynb"
        nbformat.write(new_notebook(cells=[new_code_cell("import gpu_viz\n" + banner)]), str(src))
        decks.append(slides.Deck(name, name, src, tmp_path / "x.ipynb", html=tmp_path / f"{name}.slides.html",
                                 mode="cpu", date="2026-12-02"))
    decks.append(slides.Deck("11_gone", "gone", tmp_path / "missing.ipynb", tmp_path / "y.ipynb",
                             html=tmp_path / "11_gone.slides.html", mode="cpu"))
    decks.append(slides.Deck("12_gpu", "gpu", decks[1].source, tmp_path / "z.ipynb",
                             html=tmp_path / "12_gpu.slides.html", mode="gpu", gpu="NVIDIA H200"))
    index = slides.write_index(decks, tmp_path).read_text()
    rows = {d.name: index[index.index(f'href="{d.name}.slides.html"'):] for d in decks}
    first_label = lambda text: min((text.find(lbl), lbl) for lbl in  # noqa: E731
                                   (slides.CPU_TRACES_LABEL, slides.CPU_RECORDS_LABEL, "GPU: NVIDIA H200") if lbl in text)[1]
    assert first_label(rows["01_traces"]) == slides.CPU_TRACES_LABEL
    assert first_label(rows["10_measured"]) == slides.CPU_RECORDS_LABEL
    assert first_label(rows["11_gone"]) == slides.CPU_TRACES_LABEL
    assert first_label(rows["12_gpu"]) == "GPU: NVIDIA H200"


def _printed(text):
    nb = new_notebook(cells=[new_code_cell("print(src)", outputs=[new_output("stream", name="stdout", text=text)])])
    return nb


def test_printed_code_becomes_an_unwrapped_block_with_marked_continuations():
    """Bug class: printed kernel source and Python source (Snippet.text, inspect.getsource) wrapped
    at the slide's edge, so the rest of a line started at column 0 as if it were a line of its own
    (deck 03 slides 2 and 6, deck 13 slide 4).  The deck shows printed code as <pre class="gv-code">
    (never wrapped by the browser: tests/slide_fit.py catches one too wide); a line longer than
    CODE_COLS is broken here at a space, its continuation indented past the line and marked as the
    players mark it.  Printed prose is left to wrap."""
    import html as html_mod
    import inspect

    from gpu_viz import kernels
    from gpu_viz.lessons import VECTOR_ADD
    from gpu_viz.rmsnorm.eager import eager_rmsnorm_gate
    from gpu_viz.widgets.player import CONTINUATION

    long_source = kernels.snippet("sreg.cuh", "sreg").text   # lines of 115 and 119 characters
    assert max(map(len, long_source.splitlines())) > slides.CODE_COLS
    for source in (VECTOR_ADD.source().text, inspect.getsource(eager_rmsnorm_gate), long_source):
        nb = _printed(source + "\n")
        assert slides.code_outputs(nb) == 1
        out = nb.cells[0].outputs[0]
        assert out.output_type == "display_data" and out.data["text/plain"] == source + "\n"
        markup = out.data["text/html"]
        assert markup.startswith(f'<pre class="{slides.CODE_CLASS}">') and markup.endswith("</pre>")
        rows = html_mod.unescape(markup[markup.index(">") + 1:-len("</pre>")]).split("\n")
        assert all(len(r) <= slides.CODE_COLS for r in rows), [r for r in rows if len(r) > slides.CODE_COLS]
        lines = source.splitlines()
        assert [r for r in rows if CONTINUATION not in r] == [r for r in rows if not r.lstrip().startswith(
            CONTINUATION.strip())], "a continuation row is marked at its start"
        # every source line is there, in order: its rows joined give it back
        joined = []
        for r in rows:
            if CONTINUATION in r:
                joined[-1] += " " + r.split(CONTINUATION, 1)[1]
            else:
                joined.append(r)
        assert [" ".join(j.split()) for j in joined] == [" ".join(ln.split()) for ln in lines]
    # the CSS width behind CODE_COLS: 19 px DejaVu Sans Mono over the slide less its padding
    assert slides.CODE_COLS == 101
    # printed prose, code followed by prose, stderr, one line: left as they are
    for text in ("CPU mode: nothing was timed here.\nShowing the newest committed record.\n",
                 VECTOR_ADD.source().text + "\nThe kernel above runs 64 threads.\n", "}\n"):
        nb = _printed(text)
        assert slides.code_outputs(nb) == 0 and nb.cells[0].outputs[0].output_type == "stream"


def test_printed_prose_keeps_names_dates_and_numbers_whole():
    """Bug class: printed status lines broke inside "2026-12-02" ("2026-" / "12-02"), "2e-05" and
    between "NVIDIA" and "H200".  In a deck a hyphen inside a word, date or number is followed by a
    word joiner and the spaces of gpu_viz.words.NO_BREAK are no-break spaces; the text reads the same."""
    text = "recorded on NVIDIA H200, 2026-12-02, driver 580.159.04: atol=2e-05, 4,227 GB/s (not live).\n"
    nb = _printed(text)
    assert slides.glue_printed_words(nb) == 1
    shown = nb.cells[0].outputs[0].text
    assert shown.replace("\u2060", "").replace("\u00a0", " ") == text
    for whole in ("NVIDIA\u00a0H200", "2026-\u206012-\u206002", "2e-\u206005", "4,227\u00a0GB/s"):
        assert whole in shown, whole
    assert slides.glue_printed_words(nb) == 0   # already glued


def test_printed_prose_keeps_a_short_parenthesis_and_a_shape_whole():
    """Bug class: a printed note wrapped "(the" / "shapes it has)" and "128 x" / "4096".  The
    spaces inside a short parenthesis, inside a shape and between a number and the short bracket
    after it are no-break spaces in a deck (gpu_viz.words.keep_whole); a long parenthesis still
    wraps at its spaces."""
    from gpu_viz import words

    text = ("The table shows the committed record at 4096x2048, 16384x4096 (the shapes it has); "
            "at 128 x 4096: 63.69 (14.6x), see (a parenthesis far too long to keep on one line).\n")
    nb = _printed(text)
    assert slides.glue_printed_words(nb) == 1
    shown = nb.cells[0].outputs[0].text
    assert shown.replace("\u2060", "").replace("\u00a0", " ") == text
    for whole in ("16384x4096\u00a0(the\u00a0shapes\u00a0it\u00a0has)", "128\u00a0x\u00a04096", "63.69\u00a0(14.6x)"):
        assert whole in shown, whole
    assert "(a parenthesis far too long" in shown
    assert words.keep_whole(shown) == shown


def test_keep_whole_binds_numbers_to_units_and_shapes_on_both_sides():
    """One rule for every slide's text (tables' cells and captions, printed prose): a number keeps
    its unit or count noun, a shape both of its spaces, a name what it names; words.plain undoes it."""
    from gpu_viz import words

    nb = "\u00a0"
    for text, want in (("4,251 GB/s", f"4,251{nb}GB/s"), ("1024 threads", f"1024{nb}threads"),
                       ("3 rows", f"3{nb}rows"), ("7.2 x faster", f"7.2{nb}x faster"),
                       ("16384 x 4096", f"16384{nb}x{nb}4096"), ("NVIDIA H200", f"NVIDIA{nb}H200"),
                       ("2 xyz", "2 xyz")):
        assert words.keep_whole(text) == want, text
        assert words.plain(words.keep_whole(text)) == text


def test_speaker_notes_fold_into_metadata_and_expand_for_the_deck():
    """Notes live in the metadata of the cell above (the learner's notebook shows none) and come
    back as notes cells in the deck's view, in the same place, exercise cells never carrying them."""
    import nbformat

    v4 = nbformat.v4

    def cell(c, st, tags=()):
        c.metadata["slideshow"] = {"slide_type": st}
        if tags:
            c.metadata["tags"] = list(tags)
        return c

    nb = v4.new_notebook(cells=[
        cell(v4.new_markdown_cell("## A slide"), "slide"),
        cell(v4.new_markdown_cell("first note"), "notes"),
        cell(v4.new_markdown_cell("second note"), "notes"),
        cell(v4.new_code_cell("answer = None"), "skip", ["exercise"]),
        cell(v4.new_markdown_cell("after the exercise"), "notes"),
    ])
    assert slides.fold_speaker_notes(nb) == 3
    assert [c.metadata["slideshow"]["slide_type"] for c in nb.cells] == ["slide", "skip"]
    assert nb.cells[0].metadata[slides.SPEAKER_NOTES_KEY] == "first note\n\nsecond note\n\nafter the exercise"
    assert slides.SPEAKER_NOTES_KEY not in nb.cells[1].metadata     # exercise cells are regenerated
    assert slides.expand_speaker_notes(nb) == 1
    assert [c.metadata["slideshow"]["slide_type"] for c in nb.cells] == ["slide", "notes", "skip"]
    assert nb.cells[1].source.startswith("first note")
    orphan = v4.new_notebook(cells=[cell(v4.new_markdown_cell("no host"), "notes")])
    with pytest.raises(ValueError, match="no cell above"):
        slides.fold_speaker_notes(orphan)


def test_course_notebooks_keep_no_notes_cells():
    """The class of item: speaker notes as cells in the learner's way.  Every notebook keeps its
    notes in metadata; the deck still has notes on every slide (tests/test_notebook_format.py)."""
    import nbformat

    for path in sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        cells = [i for i, c in enumerate(nb.cells) if c.metadata.get("slideshow", {}).get("slide_type") == "notes"]
        assert not cells, f"{path.name}: notes cells {cells}"
        assert any(c.metadata.get(slides.SPEAKER_NOTES_KEY) for c in nb.cells), path.name


def test_selftest_notebook_is_what_its_generator_writes(tmp_path):
    """Bug class: a committed data notebook drifts from the script that makes it (a regeneration
    dropped the long-line cell the browser's wrap test looks for).  The committed self-test notebook's
    cells (type, source, slide type, tags, notes) equal a fresh run of tests/data/make_selftest.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_selftest", DATA / "make_selftest.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = Path(gen.write(str(tmp_path / "fresh.ipynb"), gen.cells))

    def shape(path):
        nb = nbformat.read(path, as_version=4)
        return [(c.cell_type, c.source, c.metadata.get("slideshow", {}).get("slide_type"),
                 sorted(c.metadata.get("tags", [])), c.metadata.get("speaker_notes")) for c in nb.cells]

    assert shape(DATA / "99_slides_selftest.ipynb") == shape(fresh), \
        "tests/data/99_slides_selftest.ipynb differs from its generator: run .venv/bin/python tests/data/make_selftest.py"
