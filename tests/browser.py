"""Open an HTML file in headless Chromium and tell what a reader would meet (a helper for tests, not a test).

Drives Debian's Chromium (`/usr/bin/chromium`, package ``chromium``; ``make browser`` installs it) with
Playwright for Python (https://playwright.dev/python/docs/api/class-browsertype#browser-type-launch,
``executable_path``), so no browser is downloaded. A page is opened from its ``file://`` URL; every request
that is neither ``file:`` nor ``data:`` is recorded and blocked (a route handler, and a WebSocket route), so a
report that reaches the network is caught and cannot hang on it.

    from browser import browser  # noqa: F401  (the module-scoped fixture)

    def test_report(browser, tmp_path):
        page = browser.open(tmp_path / "report.html")
        assert page.problems == []
        assert page.headlines["triad_bandwidth_bytes_per_second"].value == "3.71e10"
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from xferlab.errors import BadFile

CHROMIUM = "/usr/bin/chromium"
# Flags for a headless run as root in a container: no sandbox (it refuses root), no GPU, /tmp instead of a
# small /dev/shm, and none of the browser's own background traffic (updates, safe browsing, sync).
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-default-apps", "--disable-extensions", "--no-first-run"]

# Read in the page after it loaded: every <img> and every element marked data-headline="KEY".
_IMAGES = """els => els.map(e => ({src: e.src.slice(0, 40), complete: e.complete,
                                   natural_width: e.naturalWidth, natural_height: e.naturalHeight}))"""
_HEADLINES = """els => els.map(e => ({key: e.dataset.headline, text: e.innerText.trim(),
                                      value: e.getAttribute('data-value'), data: Object.assign({}, e.dataset)}))"""


def chromium_available(executable: str | os.PathLike = CHROMIUM) -> str | None:
    """None when headless Chromium can be driven here, else why not (for a skip or failure message)."""
    if not os.access(executable, os.X_OK):
        return f"{executable} not found (Debian package chromium; `make browser` installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (it is in the dev extra: pip install '.[dev]')"
    return None


@dataclass
class Image:
    """One <img> after load: the first 40 characters of its resolved src, and whether it decoded."""

    src: str
    complete: bool
    natural_width: int
    natural_height: int

    @property
    def loaded(self) -> bool:
        # A broken image is also `complete` (loading finished) but has no natural size (HTML, img.complete).
        return self.complete and self.natural_width > 0


@dataclass
class Headline:
    """An element with data-headline=KEY: its shown text, its data-value (as written), all its data-* fields."""

    key: str
    text: str
    value: str | None
    data: dict[str, str] = field(default_factory=dict)


@dataclass
class Page:
    """What one opened page showed and asked for."""

    path: Path
    url: str
    title: str
    console_errors: list[str]  # console.error messages, uncaught exceptions, failed requests
    images: list[Image]
    all_headlines: list[Headline]  # in page order, repeated keys included
    requests: list[str]  # every URL the page asked for (data: URLs never reach the network: not listed)
    blocked: list[str]  # the requests that were not file: or data:, refused

    @property
    def headlines(self) -> dict[str, Headline]:
        """KEY → headline; a key shown more than once must be read from all_headlines."""
        keys = [h.key for h in self.all_headlines]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"headline keys shown more than once: {', '.join(repeated)} (use all_headlines)")
        return {h.key: h for h in self.all_headlines}

    @property
    def foreign_requests(self) -> list[str]:
        """Requests for anything but the page's own file: a self-contained page has none."""
        return [u for u in self.requests if u.split("#")[0] != self.url]

    @property
    def problems(self) -> list[str]:
        """Everything a self-contained page must not have, one line each; empty when the page is clean."""
        return ([f"console: {e}" for e in self.console_errors]
                + [f"image not loaded: {i.src}" for i in self.images if not i.loaded]
                + [f"request for another resource: {u}" for u in self.foreign_requests])


class Browser:
    """One headless Chromium; open() any number of pages with it, each in a fresh context. Close it after."""

    def __init__(self, executable: str | os.PathLike = CHROMIUM):
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(executable_path=str(executable), args=ARGS)
        except BaseException:
            self._playwright.stop()
            raise

    def open(self, path: str | os.PathLike, screenshot: str | os.PathLike | None = None,
             timeout_seconds: float = 30) -> Page:
        """Load `path` until its load event, read it, and optionally save a full-page PNG to `screenshot`.

        What the page's scripts do later than the tasks they queue during load (a timer of some seconds)
        is not awaited: a static report runs none."""
        path = Path(path).resolve()
        if not path.is_file():
            raise BadFile(f"page to open {path}: no such file (a path to an HTML file is allowed)")
        url = path.as_uri()
        errors: list[str] = []
        requests: list[str] = []
        blocked: list[str] = []

        def route(r):
            if r.request.url.startswith(("file:", "data:")):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort("blockedbyclient")

        def console(message):
            if message.type == "error":
                where = message.location
                errors.append(f"console.error: {message.text} ({where.get('url')}:{where.get('lineNumber')})")

        def websocket(ws):
            requests.append(ws.url)
            blocked.append(ws.url)
            ws.close()

        context = self._browser.new_context(service_workers="block")
        try:
            context.route("**/*", route)
            context.route_web_socket(re.compile(".*"), websocket)
            page = context.new_page()
            page.set_default_timeout(timeout_seconds * 1000)
            page.on("request", lambda r: requests.append(r.url))
            page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}: {r.failure}"))
            page.on("pageerror", lambda e: errors.append(f"uncaught {e.name or 'Error'}: {e.message}"))
            page.on("console", console)
            page.goto(url, wait_until="load")
            title = page.title()
            images = [Image(**i) for i in page.eval_on_selector_all("img", _IMAGES)]
            headlines = [Headline(**h) for h in page.eval_on_selector_all("[data-headline]", _HEADLINES)]
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
            page.close()  # delivers the events still on their way
        finally:
            context.close()
        return Page(path=path, url=url, title=title, console_errors=errors, images=images,
                    all_headlines=headlines, requests=requests, blocked=blocked)

    def close(self) -> None:
        self._browser.close()
        self._playwright.stop()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_page(path: str | os.PathLike, screenshot: str | os.PathLike | None = None) -> Page:
    """Open one page in a browser of its own (about a second to launch; use the fixture for several)."""
    with Browser() as opened:
        return opened.open(path, screenshot=screenshot)


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module. Outside CI a machine without it skips; in CI (CI set) that fails."""
    why = chromium_available()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {why}")
        pytest.skip(f"no headless Chromium here: {why}")
    with Browser() as opened:
        yield opened


def main(argv: list[str] | None = None) -> int:
    """``python tests/browser.py REPORT.html OUT.png [--width 1280] [--crop HEIGHT]``: open a page in
    headless Chromium, print its problems (one a line, as :attr:`Page.problems` gives them) and write a
    full-page screenshot, or its top HEIGHT pixels with ``--crop``. Exit status 1 when the page has
    problems, 2 for bad arguments or a missing browser.

    The viewport width is set on the context that :meth:`Browser.open` makes (Playwright's
    ``new_context(viewport=…)``); the crop is done with Pillow, which saves an optimized PNG."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python tests/browser.py", description=main.__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, help="the HTML file to open")
    parser.add_argument("out", type=Path, help="the PNG screenshot to write")
    parser.add_argument("--width", type=int, default=1280, help="viewport width in CSS pixels (default 1280)")
    parser.add_argument("--crop", type=int, default=None, metavar="HEIGHT", help="keep only the top HEIGHT pixels")
    args = parser.parse_args(argv)
    if args.width <= 0 or (args.crop is not None and args.crop <= 0):
        parser.error("--width and --crop must be positive pixel counts")
    why = chromium_available()
    if why:
        print(f"error: no headless Chromium here: {why}", file=sys.stderr)
        return 2
    with Browser() as opened:
        new_context = opened._browser.new_context
        opened._browser.new_context = lambda **kw: new_context(viewport={"width": args.width, "height": 720}, **kw)
        try:
            page = opened.open(args.page, screenshot=args.out)
        except BadFile as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    from PIL import Image as Picture

    with Picture.open(args.out) as full:
        full.load()
    shot = full.crop((0, 0, full.width, args.crop)) if args.crop is not None and args.crop < full.height else full
    shot.save(args.out, optimize=True)
    width, height = shot.size
    for problem in page.problems:
        print(problem)
    print(f"{args.out}: {width} x {height} px, {args.out.stat().st_size} bytes; {len(page.images)} images, "
          f"{len(page.all_headlines)} headline figures, {len(page.problems)} problems")
    return 1 if page.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
