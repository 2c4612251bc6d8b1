"""`kerncap report OUT`: one self-contained HTML page about a capture or a regime set — the
regime table, per-regime speed-up bars, the captured image's and the candidate's kernel times,
the footprint as a per-region read/written map, and the lint summary. Charts are matplotlib
SVG inlined into the page (text kept as text, so the numbers can be read and searched); the
page loads nothing from the network and runs no script.

    python -m kerncap.report OUT [--verdict VERDICT.json] [-o OUT/report.html] [--no-lint]

VERDICT.json: what `kerncap validate OUT --json [--cubin V]` printed (a regime set's
kerncap-regime-verdict or one capture's kerncap-verdict); without it the page shows the
workload (shares, footprint, lint) and no verdicts or speed-ups.
"""
from __future__ import annotations

import argparse
import html
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from . import out_layout

REPORT_FORMAT = "kerncap-report"
REPORT_VERSION = 1
MAX_JSON_BYTES = 64 << 20


@dataclass
class Regime:
    dir: str
    shape: str
    launches: int = 0
    share: float = 1.0
    captured: bool = True
    verdict: Optional[Dict[str, Any]] = None   # the one judge's document for this regime
    result: Optional[str] = None
    strength: Optional[str] = None
    line: str = ""
    speedup: Optional[float] = None
    footprint: List[Dict[str, Any]] = field(default_factory=list)  # footprint.json's regions
    lint: Optional[Dict[str, Any]] = None


def _read_json(path: str, what: str) -> Dict[str, Any]:
    """A JSON object from a regular file inside what the user named; ValueError with a clear
    message otherwise (the report's inputs are files other people made)."""
    if os.path.islink(path) or not os.path.isfile(path):
        raise ValueError(f"{what} {path}: not a regular file")
    if os.path.getsize(path) > MAX_JSON_BYTES:
        raise ValueError(f"{what} {path}: larger than {MAX_JSON_BYTES >> 20} MiB")
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except ValueError as e:
            raise ValueError(f"{what} {path}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{what} {path}: not a JSON object")
    return doc


def _shape(grid, block, smem=0) -> str:
    s = "x".join(str(v) for v in grid) + " / " + "x".join(str(v) for v in block)
    return s + (f" smem {smem}" if smem else "")


def _no_links(out: str, *parts: str) -> str:
    """OUT/parts..., refusing any component below OUT that is a symbolic link: a link inside a
    set or capture that other people made could lead anywhere (a name check alone, or a check
    of the resolved path, lets it). OUT itself is what the user named and may be a link."""
    path = out
    for part in parts:
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise ValueError(f"{path} is a symbolic link; a capture's and a regime set's files and directories "
                             "must be plain ones inside OUT (links are not followed)")
    return path


def _inside(out: str, name: str) -> str:
    """OUT/name, refusing names that leave OUT (regimes.json is untrusted) and links."""
    if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"regimes.json names a directory outside OUT: {name!r}")
    return _no_links(out, name)


def load(out: str, verdict_path: Optional[str], lint: bool, kerncap: Optional[str]) -> Dict[str, Any]:
    """Everything the page shows, as one JSON-able document (also written beside the page)."""
    regimes: List[Regime] = []
    title = ""
    index_path = os.path.join(out, out_layout.REGIMES_INDEX)
    if os.path.lexists(os.path.join(out, out_layout.REGIME_KERNELS_INDEX)):
        kernels = _read_json(os.path.join(out, out_layout.REGIME_KERNELS_INDEX), "regime kernel index")
        dirs = ", ".join(str(k.get("dir")) for k in kernels.get("kernels", []) if isinstance(k, dict))
        raise ValueError(f"{out} holds the regime sets of several kernels ({dirs}): report one of them, "
                         f"kerncap report {out}/KK-<name>")
    if os.path.lexists(index_path):
        idx = _read_json(index_path, "regime index")
        if idx.get("format") != "kerncap-regimes" or idx.get("version") != 1:
            raise ValueError(f"{index_path}: not a kerncap-regimes version 1 index")
        title = idx.get("kernel", {}).get("demangled", "")
        for r in idx.get("regimes", []):
            regimes.append(Regime(dir=str(r["dir"]), shape=_shape(r["grid"], r["block"], r.get("dynamic_shared", 0)),
                                  launches=int(r["launches"]), share=float(r["share"]), captured=bool(r["captured"])))
    else:
        manifest = _read_json(_no_links(out, "capture", "manifest.json"), "capture manifest")
        title = manifest.get("kernel", {}).get("demangled", "")
        launch = manifest.get("launch", {})
        regimes.append(Regime(dir=".", shape=_shape(launch.get("grid", []), launch.get("block", []),
                                                    launch.get("shared_mem_bytes", 0)), launches=1))
    verdict = _read_json(verdict_path, "verdict") if verdict_path else None
    if verdict is not None:
        fmt = verdict.get("format")
        if fmt == "kerncap-regime-verdict":
            by_dir = {r.get("dir"): r for r in verdict.get("regimes", [])}
            for g in regimes:
                v = by_dir.get(g.dir)
                if v:
                    g.verdict, g.result, g.strength = v.get("verdict"), v.get("result"), v.get("strength")
                    g.line, g.speedup = v.get("line", ""), v.get("speedup")
        elif fmt == "kerncap-verdict" and len(regimes) == 1:
            g = regimes[0]
            g.verdict, g.result, g.strength, g.line = verdict, verdict.get("result"), verdict.get("strength"), \
                verdict.get("line", "")
            sp = verdict.get("speedup")
            g.speedup = sp.get("speedup") if isinstance(sp, dict) else None
        else:
            raise ValueError(f"{verdict_path}: a {fmt!r} document; expected what `kerncap validate OUT --json` "
                             "prints for this OUT")
    for g in regimes:
        d = out if g.dir == "." else _inside(out, g.dir)
        fp = _no_links(d, "capture", "footprint.json")
        if os.path.isfile(fp) and not os.path.islink(fp):
            g.footprint = [r for r in _read_json(fp, "footprint").get("regions", []) if isinstance(r, dict)]
        if lint and g.captured and kerncap:
            p = subprocess.run([kerncap, "lint", d, "--json", "--baseline"], capture_output=True, text=True,
                               timeout=300)
            try:
                g.lint = json.loads(p.stdout)
            except ValueError:
                g.lint = {"error": (p.stderr.strip() or f"exit {p.returncode}")[-300:]}
    return {"format": REPORT_FORMAT, "version": REPORT_VERSION, "kernel": title, "out": os.path.abspath(out),
            "verdict": {k: verdict.get(k) for k in ("result", "line", "weighted_speedup", "app_projection",
                                                     "coverage")} if verdict else None,
            "regimes": [g.__dict__ for g in regimes]}


# ---- charts ---------------------------------------------------------------------------------


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline: no XML prolog or doctype


def charts(doc: Dict[str, Any]) -> Dict[str, str]:
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: the numbers are in the page
    matplotlib.rcParams["svg.hashsalt"] = "kerncap"  # stable ids
    import matplotlib.pyplot as plt

    regimes = doc["regimes"]
    names = [r["dir"] for r in regimes]
    out: Dict[str, str] = {}

    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(regimes)))
    shares = [100 * r["share"] for r in regimes]
    bars = ax.barh(names, shares, color="#4c78a8")
    ax.bar_label(bars, labels=[f"{s:.1f}%" for s in shares], padding=3)
    ax.set_xlabel("share of the kernel's GPU time (%)")
    ax.invert_yaxis()
    out["shares"] = _svg(fig)
    plt.close(fig)

    timed = [r for r in regimes if r.get("speedup")]
    if timed:
        fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(timed)))
        vals = [r["speedup"] for r in timed]
        bars = ax.barh([r["dir"] for r in timed], vals, color=["#54a24b" if v >= 1 else "#e45756" for v in vals])
        ax.bar_label(bars, labels=[f"x{v:.3f}" for v in vals], padding=3)
        ax.axvline(1.0, color="black", linewidth=0.8)
        w = (doc.get("verdict") or {}).get("weighted_speedup")
        if w:
            ax.axvline(w, color="#f58518", linestyle="--", linewidth=1.2, label=f"weighted x{w:.3f}")
            ax.legend(loc="lower right")
        ax.set_xlabel("speed-up (captured image median / candidate median)")
        ax.invert_yaxis()
        out["speedups"] = _svg(fig)
        plt.close(fig)

        rows = [(r["dir"], r["verdict"]["speedup"]) for r in timed
                if isinstance(r.get("verdict"), dict) and isinstance(r["verdict"].get("speedup"), dict)]
        if rows:
            fig, ax = plt.subplots(figsize=(7, 0.8 + 0.6 * len(rows)))
            y = list(range(len(rows)))
            cap = [s.get("captured_median_ms", 0) * 1e3 for _, s in rows]
            var = [s.get("variant_median_ms", 0) * 1e3 for _, s in rows]
            ax.barh([i - 0.2 for i in y], cap, height=0.38, xerr=[s.get("captured_stddev_ms", 0) * 1e3 for _, s in rows],
                    color="#9ecae9", label="captured image")
            ax.barh([i + 0.2 for i in y], var, height=0.38, xerr=[s.get("variant_stddev_ms", 0) * 1e3 for _, s in rows],
                    color="#f58518", label="candidate")
            for i in y:
                ax.text(cap[i], i - 0.2, f" {cap[i]:.2f}", va="center")
                ax.text(var[i], i + 0.2, f" {var[i]:.2f}", va="center")
            ax.set_yticks(y, [n for n, _ in rows])
            ax.set_xlabel("kernel time (µs): median, bar = one standard deviation")
            ax.invert_yaxis()
            ax.legend(loc="lower right")
            out["timing"] = _svg(fig)
            plt.close(fig)

    with_fp = [r for r in regimes if r.get("footprint")]
    if with_fp:
        n = sum(len(r["footprint"]) for r in with_fp)
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.32 * n))
        labels, y = [], 0
        for r in with_fp:
            for reg in r["footprint"]:
                size = max(int(reg.get("size", 0)), 1)
                read = int(reg.get("read_bytes", 0)) / size * 100
                written = int(reg.get("written_bytes", 0)) / size * 100
                ax.barh(y, read, height=0.35, color="#4c78a8", label="read" if y == 0 else None)
                ax.barh(y + 0.35, written, height=0.35, color="#e45756", label="written" if y == 0 else None)
                labels.append(f"{r['dir']} region {reg.get('id')}")
                y += 1
        ax.set_yticks([i + 0.17 for i in range(y)], labels)
        ax.set_xlim(0, 100)
        ax.set_xlabel("bytes of the region read / written by the launch (%)")
        ax.invert_yaxis()
        ax.legend(loc="lower right")
        out["footprint"] = _svg(fig)
        plt.close(fig)
    return out


# ---- the page --------------------------------------------------------------------------------


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v))


def page(doc: Dict[str, Any], svgs: Dict[str, str]) -> str:
    v = doc.get("verdict") or {}
    rows = []
    for r in doc["regimes"]:
        sp = f"x{r['speedup']:.3f}" if r.get("speedup") else "-"
        res = r.get("result") or ("not captured" if not r.get("captured") else "-")
        rows.append(f"<tr class=\"{_e((res or '').lower())}\"><td>{_e(r['dir'])}</td><td>{_e(r['shape'])}</td>"
                    f"<td>{r['launches']}</td><td>{100 * r['share']:.1f}%</td><td>{_e(res)}</td>"
                    f"<td>{_e(r.get('strength') or '-')}</td><td>{sp}</td><td>{_e(r.get('line'))}</td></tr>")
    lint_rows = []
    for r in doc["regimes"]:
        lt = r.get("lint")
        if not lt:
            continue
        if "error" in lt:
            lint_rows.append(f"<tr><td>{_e(r['dir'])}</td><td colspan=\"2\">lint failed: {_e(lt['error'])}</td></tr>")
            continue
        checks = "; ".join(f"{c.get('name')}: {c.get('status')} ({c.get('detail')})" for c in lt.get("checks", [])
                           if isinstance(c, dict))
        occ = (lt.get("occupancy") or {}).get("occupancy")
        occ_text = f"occupancy {occ:.2f}; " if isinstance(occ, (int, float)) else ""
        lint_rows.append(f"<tr><td>{_e(r['dir'])}</td><td>{_e(lt.get('line'))}</td><td>{_e(occ_text + checks)}</td></tr>")
    sections = []
    for key, title in (("shares", "Share of the kernel's GPU time per regime"),
                       ("speedups", "Speed-up per regime"),
                       ("timing", "Kernel time: captured image vs candidate"),
                       ("footprint", "Footprint: what each launch reads and writes")):
        if key in svgs:
            sections.append(f"<section id=\"{key}\"><h2>{title}</h2>\n{svgs[key]}\n</section>")
    summary = ""
    if v:
        summary = f"<p class=\"line\">{_e(v.get('line'))}</p>"
        if v.get("weighted_speedup"):
            summary += (f"<p>Weighted speed-up <b id=\"weighted\">x{v['weighted_speedup']:.3f}</b>"
                        + (f"; the application's GPU time x{v['app_projection']:.3f} (Amdahl)" if v.get(
                            "app_projection") else "") + "</p>")
    data = html.escape(json.dumps(doc, default=str))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>kerncap report: {_e(doc['kernel'])}</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 2em; max-width: 1100px; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
tr.pass td:nth-child(5) {{ color: #2a7d2a; }} tr.fail td:nth-child(5) {{ color: #b22; font-weight: bold; }}
.line {{ font-family: monospace; }} svg {{ max-width: 100%; height: auto; }}
</style></head><body>
<h1>kerncap report</h1>
<p><b>{_e(doc['kernel'])}</b><br>{_e(doc['out'])}</p>
{summary}
<h2>Regimes</h2>
<table id="regimes"><tr><th>regime</th><th>grid / block</th><th>launches</th><th>share</th><th>verdict</th>
<th>strength</th><th>speed-up</th><th>line</th></tr>
{''.join(rows)}
</table>
{''.join(sections)}
{'<section id="lint"><h2>Lint</h2><table>' + ''.join(lint_rows) + '</table></section>' if lint_rows else ''}
<script type="application/json" id="kerncap-report-data">{data}</script>
</body></html>
"""


def write(out: str, verdict: Optional[str], output: Optional[str], lint: bool = True,
          kerncap: Optional[str] = None) -> str:
    doc = load(out, verdict, lint, kerncap)
    text = page(doc, charts(doc))
    path = output or os.path.join(out, "report.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="kerncap report", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="a capture's OUT or a regime set (extract --regimes)")
    ap.add_argument("--verdict", help="what `kerncap validate OUT --json` printed")
    ap.add_argument("-o", "--output", help="the page (default OUT/report.html)")
    ap.add_argument("--no-lint", action="store_true", help="do not run `kerncap lint` on each regime")
    a = ap.parse_args(argv)
    kc = None
    if not a.no_lint:
        from .cli_path import find_kerncap
        try:
            kc = find_kerncap()
        except Exception as e:  # no binary: the page goes without lint, and says so on stderr
            print(f"kerncap report: no lint ({e})", file=sys.stderr)
    try:
        path = write(a.out, a.verdict, a.output, lint=not a.no_lint, kerncap=kc)
    except (ValueError, KeyError, TypeError) as e:
        print(f"kerncap report: error: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"kerncap report: error: {e}; install the plotting library: pip install 'kerncap[report]'",
              file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
