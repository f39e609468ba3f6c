#!/usr/bin/env python3
"""Screenshots of what jaxmagic renders today, for the README: `make gallery`.

    python scripts/gallery.py [NOTEBOOK ...] [--out docs/gallery] [--themes light dark]

Each notebook (default: examples/00_tour.ipynb, the tour of every magic;
08_real_models.ipynb, every magic on Flax, Equinox, Optax and Haiku code; 09_model_graphs,
graphs of real models; 10_profile, where the time goes; 11_sharding, where the data lives
and moves; 12_memory, where the memory goes; 13_values, what flows and where a NaN is
born) runs in a real kernel, becomes nbconvert HTML, and opens in Debian's headless
Chromium with JavaScript off;
every cell that shows a jaxmagic output is photographed, input and output together, as
docs/gallery/<notebook>-<cell>-<magic>-<theme>.png.  docs/gallery/README.md lists them.
Uses the same code as the browser tests (tests/notebook_support.py).
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from notebook_support import (  # noqa: E402
    ExecutedNotebooks,
    block_network,
    chromium_path,
    jaxmagic_outputs,
    launch,
    to_html,
)


def shrink(png: bytes, path: Path) -> None:
    """Save a screenshot as a 256-colour PNG (UI screenshots lose nothing visible)."""
    from PIL import Image

    im = Image.open(io.BytesIO(png)).convert("RGB")
    im.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path,
                    default=[ROOT / "examples" / "00_tour.ipynb",
                             ROOT / "examples" / "08_real_models.ipynb",
                             ROOT / "examples" / "09_model_graphs.ipynb",
                             ROOT / "examples" / "10_profile.ipynb",
                             ROOT / "examples" / "11_sharding.ipynb",
                             ROOT / "examples" / "12_memory.ipynb",
                             ROOT / "examples" / "13_values.ipynb"])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "gallery")
    ap.add_argument("--themes", nargs="+", default=["light", "dark"])
    ap.add_argument("--width", type=int, default=900)
    a = ap.parse_args(argv)
    chromium = chromium_path()
    if chromium is None:
        sys.exit("needs Debian's chromium: bash scripts/system-packages.sh")
    from playwright.sync_api import sync_playwright

    a.out.mkdir(parents=True, exist_ok=True)
    for old in a.out.glob("*.png"):
        old.unlink()
    made, index = [], ["# Gallery", "",
                       "What jaxmagic renders today: nbconvert HTML in headless Chromium, "
                       "JavaScript off. Regenerate with `make gallery`.", ""]
    with tempfile.TemporaryDirectory() as tmp:
        runs = ExecutedNotebooks(Path(tmp))
        executed = []
        for src in a.notebooks:
            nb, _, secs = runs.get(src.resolve())
            print(f"executed {src} in {secs:.1f} s", file=sys.stderr)
            executed.append((src, nb))
        with sync_playwright() as p:
            browser = launch(p, chromium)
            for src, nb in executed:
                cells = {}
                for o in jaxmagic_outputs(nb, src.stem):
                    cells.setdefault(o.cell_index, o)
                for theme in a.themes:
                    page_file = Path(tmp) / f"{src.stem}.{theme}.html"
                    page_file.write_text(to_html(nb, theme), encoding="utf-8")
                    ctx = browser.new_context(java_script_enabled=False,
                                              viewport={"width": a.width, "height": 800})
                    block_network(ctx, [])
                    page = ctx.new_page()
                    page.goto(page_file.as_uri(), wait_until="load")
                    for ci, o in cells.items():
                        cell = page.locator(f'[id="cell-id={o.cell_id}"]')
                        name = f"{src.stem}-{ci:02d}-{o.magic or 'output'}-{theme}.png"
                        shrink(cell.screenshot(), a.out / name)
                        made.append(a.out / name)
                        if theme == a.themes[0]:
                            lines = nb.cells[ci].source.strip().splitlines()
                            magic = [ln for ln in lines if ln.lstrip().startswith("%")]
                            index += [f"### {src.stem}, cell {ci}: `{(magic or lines)[0]}`", ""]
                            index += [f"![{t}]({src.stem}-{ci:02d}-{o.magic or 'output'}-{t}.png)"
                                      for t in a.themes] + [""]
                    ctx.close()
            browser.close()
    (a.out / "README.md").write_text("\n".join(index))
    for m in made:
        print(m.relative_to(ROOT) if m.is_relative_to(ROOT) else m)
    print(f"{len(made)} screenshots in {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
