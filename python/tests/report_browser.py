"""Open a `kerncap report` page in a real headless browser (Debian's chromium) and check it: no
console error, the four charts rendered into the DOM with their bars, and each regime's speed-up
and the weighted figure of the verdict JSON shown. Used by test_report.py on the stored fixture
and, from the command line, on a page a GPU run wrote:

    python3 python/tests/report_browser.py PAGE.html VERDICT.json
prints what it checked; exit 0 when the page passes, 1 when not, 77 without a browser."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional


def browser() -> Optional[str]:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def problems(page: str, verdict: Dict[str, Any]) -> List[str]:
    """What is wrong with PAGE as the browser renders it (empty: nothing)."""
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run([browser(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                            "--virtual-time-budget=2000", "--dump-dom", "file://" + os.path.abspath(page)],
                           capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return [f"the browser exited {p.returncode}: {p.stderr[-2000:]}"]
    dom, out = p.stdout, []
    console = [line for line in p.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    if console:
        out.append(f"console errors: {console}")
    if dom.count("<svg") != 4:
        out.append(f"{dom.count('<svg')} charts in the DOM, expected 4")
    if len(re.findall(r"<path", dom)) <= 20:
        out.append("the charts hold almost no drawing (<= 20 paths)")
    for r in verdict.get("regimes", []):
        if r.get("speedup") is not None and f"x{r['speedup']:.3f}" not in dom:
            out.append(f"regime {r.get('dir')}: its speed-up x{r['speedup']:.3f} is not on the page")
    if verdict.get("weighted_speedup") is not None and f"x{verdict['weighted_speedup']:.3f}" not in dom:
        out.append(f"the weighted speed-up x{verdict['weighted_speedup']:.3f} is not on the page")
    return out


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    if browser() is None:
        print("SKIPPED: no headless browser (scripts/install-deps.sh installs chromium)")
        return 77
    verdict = json.load(open(argv[2], encoding="utf-8"))
    found = problems(argv[1], verdict)
    for f in found:
        print("FAIL:", f)
    if not found:
        print(f"PASS: {argv[1]} rendered in {os.path.basename(browser())} without console errors; 4 charts; "
              f"{len(verdict.get('regimes', []))} regime speed-ups and the weighted x{verdict.get('weighted_speedup')} "
              "shown")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
