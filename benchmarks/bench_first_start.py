"""A newcomer's first ``make run``, and a later one: from the command to a page where the demo can be labelled.

Clones this repository's HEAD into a temporary folder and, there, as a new user on a machine that
has never run MarginLab (a temporary HOME: no data folder, no Numba cache, an empty pip cache),
runs ``make run`` on a free port in a terminal (a pseudo-terminal, so pip and the app print what
they print to a person). It times, from the command:

* (a) the server answering its health check;
* (b) in Debian's headless Chromium, a signed-in Label page showing the demo's first item with its
  answer buttons (signed in as the first owner with the password ``make run`` printed once on
  the console, as the README says). If the page shows no item after the sign-in it starts the
  default session (New session, Start labelling) as a newcomer would: that click is in (b);
* (c) the first label (Positive), to the next item on screen: on a first start it waits for
  what the background compile has not finished yet;
* (d) the console's "compiled code ready" line: the background compile of everything else (waited
  for at most ``--wait-compile`` s, 1200 by default; 0: not waited for, and the later start goes on
  with what is left).

Then it stops the server as Ctrl-C does, runs ``make run`` again in the same clone and times (a),
(b) and (c) of that later start. Also printed: the longest silence of the console before (b) on
the first start (a step that takes longer than 10 s must say what it is doing), the load average
during the run (the machine's other work slows every figure), and where the install's packages
came from (the machine's pip configuration).

    .venv/bin/python benchmarks/bench_first_start.py [--keep] [--wait-compile SECONDS]

Targets (issue 29): (b) <= 180 s on the first start, package install included; (b) <= 15 s on a
later start.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.browser.test_browser import free_port, launch_browser, wait_for_app, wait_for_health

ROOT = Path(__file__).resolve().parent.parent

TARGET_FIRST_S = 180.0
TARGET_LATER_S = 15.0
LONGEST_SILENCE_S = 10.0

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
PASSWORD_LINE = re.compile(
    r"created the owner account '(?P<name>[^']+)'\. Its password \(shown only this once\): "
    r"(?P<password>\S+)"
)
BUTTONS = ".st-key-answer_buttons button:has([aria-label='Shortcut P']):enabled"
CAPTION = ".st-key-item_caption"


class Console:
    """``make run`` in a pseudo-terminal; every line (or carriage-return update) it prints, timed."""

    def __init__(self, command: list[str], cwd: Path, env: dict, log: Path):
        self.lines: list[tuple[float, str]] = []
        self._log = open(log, "a", encoding="utf-8")
        master, slave = pty.openpty()
        self.start = time.monotonic()
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, start_new_session=True
        )
        os.close(slave)
        self._master = master
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        pending = ""
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # (the terminal closed: every process on it has exited)
                break
            if not chunk:
                break
            pending += chunk.decode("utf-8", errors="replace")
            *parts, pending = re.split(r"[\r\n]", pending)
            now = time.monotonic() - self.start
            for part in parts:
                text = ANSI.sub("", part).strip()
                if text:
                    self.lines.append((now, text))
                    self._log.write(f"{now:8.1f}  {text}\n")
                    self._log.flush()
        os.close(self._master)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def find(self, pattern: re.Pattern, timeout: float = 0.0) -> re.Match | None:
        deadline = time.monotonic() + timeout
        while True:
            for _, text in list(self.lines):
                found = pattern.search(text)
                if found:
                    return found
            if time.monotonic() >= deadline or self.process.poll() is not None:
                return None
            time.sleep(0.2)

    def first_time(self, pattern: re.Pattern, after: float = 0.0) -> float | None:
        return next((t for t, text in list(self.lines) if t >= after and pattern.search(text)), None)

    def longest_silence(self, until: float) -> tuple[float, str]:
        """The longest stretch without output before ``until`` s, and the line printed before it."""
        times = [(0.0, "(start)")] + [(t, text) for t, text in self.lines if t <= until] + [(until, "")]
        gaps = [(b[0] - a[0], a[1]) for a, b in zip(times, times[1:], strict=False)]
        return max(gaps)

    def stop(self) -> None:
        """Ctrl-C, as a person stops it (the whole process group of the terminal), then wait."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self._reader.join(timeout=10)
        self._log.close()


class LoadSampler:
    """The 1-minute load average every 5 s while the benchmark runs."""

    def __init__(self):
        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.wait(5.0):
            self.samples.append(os.getloadavg()[0])

    def summary(self) -> str:
        self._stop.set()
        s = self.samples
        return (
            f"1-min load average {min(s):.1f}–{max(s):.1f} (mean {statistics.fmean(s):.1f}) on {os.cpu_count()} cores"
        )


def to_labelable_item(
    browser, url: str, name: str, password: str, console: Console, steps: dict
) -> tuple[float, bool, object]:
    """Sign in; start the default session when the page shows no item; return the seconds since the
    command when the first item's answer buttons were on screen, whether a session had to be started,
    and the page.  ``steps`` gets the times of the way there."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.get_by_role("textbox", name="Password").wait_for(timeout=300_000)
    steps["sign-in form"] = console.elapsed()
    page.get_by_role("textbox", name="Name").fill(name)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.locator(BUTTONS).or_(page.get_by_text("Start a session with")).first.wait_for(timeout=600_000)
    steps["signed in, Label page"] = console.elapsed()
    started = False
    if not page.locator(BUTTONS).count():
        # (no session open yet: the newcomer opens New session and starts the one the form offers)
        wait_for_app(page, timeout_ms=600_000)
        page.get_by_role("button", name=re.compile("New session")).click()
        page.get_by_role("button", name="Start labelling").click()
        steps["Start labelling clicked"] = console.elapsed()
        started = True
    page.wait_for_selector(BUTTONS, timeout=900_000)
    return console.elapsed(), started, page


NEXT_ITEM = (
    "(old) => { const el = document.querySelector('.st-key-item_caption'); return el && el.innerText.trim() !== old; }"
)


def first_label(page, console: Console, screenshot: Path | None = None) -> float:
    """Click Positive on the item shown; the seconds since the command when the next item is on screen.
    With ``screenshot``, the page as it looks 5 s into a wait for the next item (if it waits that long)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    before = page.locator(CAPTION).inner_text(timeout=60_000).strip()
    page.locator(BUTTONS).click()
    try:
        page.wait_for_function(NEXT_ITEM, arg=before, timeout=5_000)
    except PlaywrightTimeout:
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=True)
            print(f"   (the page 5 s into the first label's wait: {screenshot})", flush=True)
        page.wait_for_function(NEXT_ITEM, arg=before, timeout=1_800_000)
    return console.elapsed()


def one_start(
    label: str, clone: Path, env: dict, port: int, browser, log: Path, credentials: dict, wait_compile: float
) -> dict:
    print(f"\n== {label}: make run (console: {log})", flush=True)
    console = Console(["make", "run", f"PORT={port}"], clone, env, log)
    url = f"http://127.0.0.1:{port}"
    figures: dict = {}
    try:
        wait_for_health(url, console.process, timeout=1800)
        figures["server"] = console.elapsed()
        print(f"   (a) server answering after {figures['server']:.1f} s", flush=True)
        if not credentials:
            found = console.find(PASSWORD_LINE, timeout=60)
            if found is None:
                raise RuntimeError("make run printed no owner password")
            credentials.update(name=found["name"], password=found["password"])
        steps: dict = {}
        figures["labelable"], figures["started_session"], page = to_labelable_item(
            browser, url, credentials["name"], credentials["password"], console, steps
        )
        print("   on the way: " + ", ".join(f"{step} {t:.1f} s" for step, t in steps.items()), flush=True)
        figures["notice"] = page.locator(".st-key-preparing_model").count() > 0
        print(
            f"   (b) signed in, first item labelable after {figures['labelable']:.1f} s"
            f"{' (session started in the page)' if figures['started_session'] else ''}"
            f"{'; the page says the model is being prepared' if figures['notice'] else ''}",
            flush=True,
        )
        figures["silence"] = console.longest_silence(figures["labelable"])
        figures["first_label"] = first_label(page, console, log.with_suffix(".wait.png"))
        print(
            f"   (c) first label answered, next item on screen after {figures['first_label']:.1f} s "
            f"({figures['first_label'] - figures['labelable']:.1f} s after (b))",
            flush=True,
        )
        install = console.first_time(re.compile(r"^MarginLab: installing the Python packages"))
        # the lock file's packages, then MarginLab itself (editable): the install ends with the latter
        installed = console.first_time(re.compile(r"^Successfully installed marginlab-"), after=install or 0.0)
        if install is not None and installed is not None:
            figures["install"] = (install, installed)
        if wait_compile:
            ready = re.compile(r"MarginLab: compiled code ready")
            if console.find(ready, timeout=wait_compile) is not None:
                figures["compiled"] = console.first_time(ready)
                print(f"   (d) background compile finished after {figures['compiled']:.1f} s", flush=True)
            else:
                print(
                    f"   (d) background compile not finished {console.elapsed():.0f} s after the command: "
                    "stopped anyway (the later start goes on with the rest)",
                    flush=True,
                )
        page.close()
    finally:
        console.stop()
    return figures


def machine_pip_sources() -> str:
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    keys = [line.split("=", 1)[0] for line in done.stdout.splitlines() if "index" in line or "find-links" in line]
    return ", ".join(keys) or "PyPI only"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary clone and its logs")
    parser.add_argument(
        "--wait-compile",
        type=float,
        default=1200.0,
        metavar="SECONDS",
        help="wait at most this long after the first label for the background compile to finish "
        "before stopping the first start (default %(default)s; 0: do not wait)",
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    work = Path(tempfile.mkdtemp(prefix="marginlab-first-start-"))
    clone, home = work / "marginlab", work / "home"
    home.mkdir()
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", head.strip()], cwd=clone, check=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MARGINLAB_", "NUMBA_", "VIRTUAL_ENV", "PYTHON", "STREAMLIT_"))
    }
    env.update(
        HOME=str(home),
        PIP_CACHE_DIR=str(work / "pip-cache"),
        TERM="xterm-256color",
        PATH=":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p),
    )
    port = free_port()
    print(f"clone of {head.strip()[:12]} in {clone}; HOME={home}; empty pip cache; port {port}")
    print(f"pip's sources on this machine: {machine_pip_sources()}")
    load = LoadSampler()
    credentials: dict = {}
    try:
        with sync_playwright() as playwright:
            browser = launch_browser(playwright)
            first = one_start(
                "first start", clone, env, port, browser, work / "first.log", credentials, args.wait_compile
            )
            later = one_start("later start", clone, env, port, browser, work / "later.log", credentials, 0.0)
            browser.close()
    finally:
        print()
        print(load.summary())
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    def verdict(value: float, target: float) -> str:
        return f"{'met' if value <= target else 'MISSED'} (target <= {target:.0f} s)"

    print("\nfigures (seconds from `make run`):")
    if "install" in first:
        begin, end = first["install"]
        print(f"  first start: package install {end - begin:.1f} s (from {begin:.1f} s to {end:.1f} s)")
    print(f"  first start: (a) server answering {first['server']:.1f} s")
    print(
        f"  first start: (b) signed-in page, demo's first item labelable {first['labelable']:.1f} s: "
        f"{verdict(first['labelable'], TARGET_FIRST_S)}"
    )
    print(
        f"  first start: (c) first label answered {first['first_label']:.1f} s "
        f"({first['first_label'] - first['labelable']:.1f} s after (b))"
    )
    if "compiled" in first:
        print(f"  first start: (d) background compile finished {first['compiled']:.1f} s")
    gap, before = first["silence"]
    print(
        f"  first start: longest console silence before (b) {gap:.1f} s, after {before!r}: "
        f"{'ok' if gap <= LONGEST_SILENCE_S else 'TOO LONG'} (<= {LONGEST_SILENCE_S:.0f} s)"
    )
    print(f"  later start: (a) server answering {later['server']:.1f} s")
    print(
        f"  later start: (b) signed-in page, item labelable {later['labelable']:.1f} s: "
        f"{verdict(later['labelable'], TARGET_LATER_S)}"
    )
    print(f"  later start: (c) first label answered {later['first_label']:.1f} s")


if __name__ == "__main__":
    main()
