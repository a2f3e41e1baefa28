"""Time from a label key press to the next item on screen, in a real browser.

Starts the app (``streamlit run app/main.py``) on a fresh temporary database,
opens it in Debian's headless Chromium through Playwright, starts a
``near-boundary`` session on the bundled digits (8 vs rest) and answers items
with the keyboard shortcuts (P / N, following the digits' true labels, as a
careful annotator would).

For every label it measures, inside the page, from the ``keydown`` event to

* ``dom``: the moment the next item's caption is in the document, and
* ``frame``: the next animation frame after that (the item painted),

then waits until the app has finished its run (charts included) and pauses
``--pause`` seconds, the time a person takes to look at the item, before the
next key. Prints median and 95th percentile next to the target (p95 <= 200 ms).

    .venv/bin/python benchmarks/bench_browser_latency.py [--labels 40] [--pause 0.3]
        [--screenshots docs/screenshots]

With ``--screenshots`` it also saves a screenshot of every page.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_browser import (  # noqa: E402
    AppServer,
    goto,
    item_caption,
    launch_browser,
    open_app,
    progress_labels,
    shown_item_index,
    start_session_in_ui,
    upload_csv_in_ui,
    wait_for_app,
)

TARGET_P95_MS = 200.0

OBSERVER = """() => {
  window.__marks = []; window.__t0 = null;
  document.addEventListener('keydown', () => { window.__t0 = performance.now(); }, true);
  const caption = () => { const el = document.querySelector('.st-key-item_caption');
                          return el ? el.textContent.trim() : null; };
  window.__last = caption();
  new MutationObserver(() => {
    const now = caption();
    if (now === null || now === window.__last || window.__t0 === null) return;
    window.__last = now;
    const t0 = window.__t0, dom = performance.now() - t0;
    window.__t0 = null;
    requestAnimationFrame(() => window.__marks.push({dom: dom, frame: performance.now() - t0, caption: now}));
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def measure(page, y_true: np.ndarray, n_labels: int, pause: float) -> list[dict]:
    page.mouse.click(5, 5)  # focus on the page, not on an input
    page.evaluate(OBSERVER)
    for k in range(n_labels):
        before = item_caption(page)
        item = shown_item_index(page)
        key = "p" if y_true[item] == 1 else "n"
        page.keyboard.press(key)
        page.wait_for_function("(n) => window.__marks.length >= n", arg=k + 1, timeout=30_000)
        wait_for_app(page)
        assert item_caption(page) != before
        time.sleep(pause)
    marks = page.evaluate("window.__marks")
    assert progress_labels(page) == n_labels, "every key press must have stored one label"
    return marks


def screenshots(page, base_url: str, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    saved = []

    def shot(name: str) -> None:
        wait_for_app(page)
        time.sleep(1.0)  # let the charts finish drawing
        # the app scrolls inside its own container: back to the top, then make the window
        # as tall as the content
        page.evaluate("() => document.querySelectorAll('*').forEach(e => { if (e.scrollTop) e.scrollTop = 0; })")
        height = page.evaluate("() => { const c = document.querySelector(\"[data-testid='stMainBlockContainer']\");"
                               " return c ? c.getBoundingClientRect().top + c.scrollHeight + 40 : 1000; }")
        page.set_viewport_size({"width": 1400, "height": int(min(max(height, 1000), 4000))})
        time.sleep(0.5)
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        page.set_viewport_size({"width": 1400, "height": 1000})
        saved.append(path)

    shot("label")
    goto(page, f"{base_url}/data")
    page.wait_for_selector("text=Datasets in the database", timeout=60_000)
    shot("data")
    upload_csv_in_ui(page, base_url, ROOT / "assets" / "breast_cancer.csv", label_column="diagnosis",
                     positive="malignant", key_column="id")
    page.wait_for_selector("text=Imported 'breast_cancer'", timeout=60_000)
    shot("data-upload")
    goto(page, f"{base_url}/compare")
    page.wait_for_selector("text=Run the comparison", timeout=60_000)
    wait_for_app(page)
    page.get_by_role("button", name="Run the comparison").click()
    page.wait_for_selector("text=Summary", timeout=600_000)
    shot("compare")
    goto(page, f"{base_url}/export")
    page.wait_for_selector("text=Model state of a session", timeout=60_000)
    shot("export")
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=int, default=60, help="labels to time (at least 30)")
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between the screen settling and the next key")
    parser.add_argument("--screenshots", type=Path, default=None, help="folder for a screenshot of every page")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from storage import repository as repo
    from storage.engine import make_engine

    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        with sync_playwright() as playwright:
            browser = launch_browser(playwright)
            try:
                with AppServer(db_url, Path(tmp) / "server.log") as server:
                    page = open_app(browser, server.url)  # signed in as the first owner
                    start_session_in_ui(page, "owner", strategy="near-boundary")
                    engine = make_engine(db_url)
                    (dataset,) = repo.list_datasets(engine)
                    y_true = repo.load_dataset_arrays(engine, dataset.id)[1]
                    marks = measure(page, y_true, args.labels, args.pause)
                    (session,) = repo.list_sessions(engine)
                    events = repo.label_events(engine, session.id)
                    engine.dispose()
                    saved = screenshots(page, server.url, args.screenshots) if args.screenshots else []
            finally:
                browser.close()

    dom = np.array([m["dom"] for m in marks])
    frame = np.array([m["frame"] for m in marks])
    update = np.array([e.update_ms for e in events if e.update_ms is not None])
    print("Label key press -> next item on screen, Chromium headless, digits 8 vs rest, near-boundary/incremental;")
    print(f"{len(marks)} labels, {args.pause:.1f} s pause after each screen settled; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    print()
    print(f"{'measure':<34} {'median ms':>10} {'p95 ms':>10} {'max ms':>10} {'target p95':>11}")
    print("-" * 79)
    for name, values in (("key -> item in the document", dom), ("key -> next frame (painted)", frame)):
        p95 = np.percentile(values, 95)
        verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
        print(f"{name:<34} {np.median(values):>10.1f} {p95:>10.1f} {values.max():>10.1f} "
              f"{'<= ' + format(TARGET_P95_MS, '.0f'):>8} {verdict}")
    if len(update):
        print(f"{'(server: model update per label)':<34} {np.median(update):>10.1f} {np.percentile(update, 95):>10.1f} "
              f"{update.max():>10.1f}")
    print(f"first label (cold start) {frame[0]:.1f} ms; labels stored: {sum(1 for e in events if e.value != 0)}")
    for path in saved:
        print(f"screenshot: {path}")


if __name__ == "__main__":
    main()
