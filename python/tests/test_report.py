"""kerncap report (python/kerncap/report.py) on the stored regime-set fixture
(tests/fixtures/report): the page holds the regime table, every chart with the numbers of the
JSON, and nothing that reaches the network; then a real headless browser (Debian's chromium)
loads it: no console error, every chart rendered with those numbers in the DOM."""
import json
import os
import re
import shutil

import pytest

from kerncap import report

import report_browser  # noqa: E402 - beside this file (pytest puts the test folder on sys.path)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "..", "tests", "fixtures", "report")
pytest.importorskip("matplotlib")


@pytest.fixture()
def page(tmp_path):
    out = tmp_path / "set"
    shutil.copytree(os.path.join(FIXTURE, "set"), out)
    path = report.write(str(out), os.path.join(FIXTURE, "verdict.json"), str(tmp_path / "report.html"), lint=False)
    return path, open(path, encoding="utf-8").read()


def test_the_page_has_the_table_every_chart_and_the_numbers(page):
    _, text = page
    verdict = json.load(open(os.path.join(FIXTURE, "verdict.json")))
    for section in ("shares", "speedups", "timing", "footprint"):
        assert f'<section id="{section}">' in text
    assert text.count("<svg") == 4
    for r in verdict["regimes"]:
        assert f">{r['dir']}<" in text                        # the table's row
        assert f"x{r['speedup']:.3f}" in text                 # the speed-up bar's label
        assert f"{100 * r['share']:.1f}%" in text             # the share bar's label
    assert f"x{verdict['weighted_speedup']:.3f}" in text     # the summary and the weighted line
    data = json.loads(re.search(r'<script type="application/json" id="kerncap-report-data">(.*?)</script>', text,
                                re.S).group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                      .replace("&gt;", ">").replace("&#x27;", "'"))
    assert data["format"] == "kerncap-report" and len(data["regimes"]) == 3


def test_the_page_reaches_nothing_outside(page):
    _, text = page
    assert "<script src" not in text and "<link" not in text and "<img" not in text
    assert not re.search(r'(src|href)="(https?:)?//', text)
    assert "default-src 'none'" in text


def test_bad_inputs_are_clear_errors(tmp_path, capsys):
    out = tmp_path / "set"
    shutil.copytree(os.path.join(FIXTURE, "set"), out)
    idx = json.load(open(out / "regimes.json"))
    idx["regimes"][0]["dir"] = "../elsewhere"
    (out / "regimes.json").write_text(json.dumps(idx))
    assert report.main([str(out), "--no-lint"]) == 2
    assert "outside OUT" in capsys.readouterr().err
    assert report.main([str(tmp_path / "missing"), "--no-lint"]) == 2
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": "kerncap-profile"}))
    shutil.copytree(os.path.join(FIXTURE, "set"), tmp_path / "set2")
    assert report.main([str(tmp_path / "set2"), "--no-lint", "--verdict", str(wrong)]) == 2
    assert "expected what `kerncap validate OUT --json` prints" in capsys.readouterr().err
    many = tmp_path / "model"
    shutil.copytree(os.path.join(FIXTURE, "set"), many / "00-scaleShift")
    (many / "regime-kernels.json").write_text(json.dumps({"format": "kerncap-regime-kernels", "version": 1,
                                                          "kernels": [{"dir": "00-scaleShift"}]}))
    assert report.main([str(many), "--no-lint"]) == 2
    assert "report one of them" in capsys.readouterr().err
    assert report.main([str(many / "00-scaleShift"), "--no-lint", "-o", str(tmp_path / "r.html")]) == 0


def test_links_inside_the_set_are_refused_not_followed(tmp_path, capsys):
    """A regime's directory, its capture directory or a plain capture's `capture` that is a
    symbolic link (to another set, to a directory outside) is an error naming the link; the
    page would otherwise show (and `lint` run on) what lies elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(os.path.join(FIXTURE, "set"), elsewhere)
    for link_at in ("01-scaleShift", "01-scaleShift/capture"):
        out = tmp_path / ("set-" + link_at.replace("/", "-"))
        shutil.copytree(os.path.join(FIXTURE, "set"), out)
        shutil.rmtree(out / link_at)
        os.symlink(elsewhere / link_at, out / link_at)
        assert report.main([str(out), "--no-lint", "-o", str(tmp_path / "r.html")]) == 2
        err = capsys.readouterr().err
        assert "is a symbolic link" in err and link_at in err, err
    one = tmp_path / "one"
    one.mkdir()
    os.symlink(elsewhere / "00-scaleShift" / "capture", one / "capture")
    assert report.main([str(one), "--no-lint", "-o", str(tmp_path / "r.html")]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    # OUT itself is what the user named: a link to a set is followed.
    os.symlink(elsewhere, tmp_path / "named")
    assert report.main([str(tmp_path / "named"), "--no-lint", "-o", str(tmp_path / "r.html")]) == 0


@pytest.mark.skipif(report_browser.browser() is None,
                    reason="no headless browser (scripts/install-deps.sh installs chromium)")
def test_a_real_browser_renders_every_chart_without_console_errors(page):
    path, _ = page
    verdict = json.load(open(os.path.join(FIXTURE, "verdict.json")))
    assert report_browser.problems(path, verdict) == []
