"""docs/screenshots/: the demo's three act pages and a what-if replay page, as headless Chromium draws them.

    python scripts/screenshots.py            # (or: /work/wt/bin/gpy scripts/screenshots.py) rewrite them

Runs the demo (``governor_client.demo.run.run``) and ``tuning-governor simulate examples/scenario.yaml`` +
``tuning-governor replay … --policy policy.example.yaml --html`` in a temporary folder, then has the
machine's Chromium (``chromium``, Debian's package) screenshot each page 1400 px wide, scaled to 1000 px.
Offline: nothing leaves the machine.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
WIDTH, SCALED = 1400, 1000
PAGES = {
    "demo-act-1.png": ("act-1-enforce", 3900),
    "demo-act-2.png": ("act-2-monitor", 1500),
    "demo-act-3.png": ("act-3-queue", 1900),
}
REPLAY = ("replay-page.png", 4400)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
CHROMIUM_FLAGS += ["--disable-component-update", "--disable-sync", "--hide-scrollbars", "--virtual-time-budget=5000"]


def shoot(chromium: str, page: Path, out: Path, height: int) -> None:
    """``page`` as Chromium draws it at WIDTH x ``height``, scaled to SCALED px wide, into ``out``."""
    from PIL import Image  # noqa: PLC0415 - a dev dependency, needed only here

    raw = out.with_suffix(".raw.png")
    profile = Path(tempfile.mkdtemp(prefix="screenshot-profile-"))
    subprocess.run(  # noqa: S603 - the machine's Chromium on a page this script wrote
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={raw}",
            f"--window-size={WIDTH},{height}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=180,
        check=True,
    )
    shutil.rmtree(profile, ignore_errors=True)
    image = Image.open(raw).convert("RGB")
    image.resize((SCALED, round(SCALED * image.height / image.width))).save(out, optimize=True)
    raw.unlink()


def pages(work: Path) -> dict[str, tuple[Path, int]]:
    """Write the demo's pages and the replay's page under ``work``: screenshot name -> (page, height)."""
    from governor_client.__main__ import main as cli  # noqa: PLC0415
    from governor_client.demo import run as demo  # noqa: PLC0415 - after the offline environment is set

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    demo.run(report_dir=work / "demo", out=io.StringIO())
    found = {name: (work / "demo" / folder / "index.html", height) for name, (folder, height) in PAGES.items()}
    # Run from ``work`` with relative names, so the page names its inputs as a user's would be named.
    shutil.copy(ROOT / "policy.example.yaml", work / "policy.example.yaml")
    here = Path.cwd()
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            os.chdir(work)
            cli(["simulate", str(ROOT / "examples" / "scenario.yaml"), "--out", "events.jsonl"])
            cli(["replay", "events.jsonl", "--policy", "policy.example.yaml", "--html", "replay"])
        finally:
            sys.stdout = stdout
            os.chdir(here)
    found[REPLAY[0]] = (work / "replay" / "index.html", REPLAY[1])
    return found


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium not found: apt-get install chromium", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="screenshots-") as work:
        for name, (page, height) in pages(Path(work)).items():
            shoot(chromium, page, OUT / name, height)
            print(OUT / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
