"""The headless-Chromium harness (tests/browser.py) on small pages written here: each fault it must catch."""

import base64
import io
import struct

import pytest
from matplotlib.figure import Figure

from browser import browser, chromium_available  # noqa: F401  (browser: the fixture)
from xferlab.errors import BadFile


def png_data_uri(width_px=120, height_px=60):
    """A real plot (matplotlib, Agg) as a PNG data: URI of exactly width_px × height_px."""
    fig = Figure(figsize=(width_px / 30, height_px / 30), dpi=30)
    fig.add_subplot().plot([0, 1, 2], [0, 1, 4])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def png_size(path):
    """Width and height from a PNG's IHDR chunk (PNG spec, 11.2.2)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def write(tmp_path, body, name="page.html"):
    path = tmp_path / name
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>fixture</title></head>"
                    f"<body>{body}</body></html>", encoding="utf-8")
    return path


def test_chromium_available_names_what_is_missing(tmp_path):
    assert chromium_available(tmp_path / "no-chromium") == \
        f"{tmp_path / 'no-chromium'} not found (Debian package chromium; `make browser` installs it)"


def test_a_good_page_is_clean(browser, tmp_path):
    uri = png_data_uri()
    path = write(tmp_path, f"""<h1>Triad</h1><img src="{uri}" alt="plot">
      <span data-headline="triad_bandwidth_bytes_per_second" data-value="3.71e10" data-run="7">37.1 GB/s</span>
      <span data-headline="latency_seconds">  90 ns </span>
      <div style="height: 2400px"></div>""")
    shot = tmp_path / "shot.png"
    page = browser.open(path, screenshot=shot)
    assert page.title == "fixture"
    assert page.console_errors == [] and page.problems == []
    assert page.requests == [path.as_uri()] and page.foreign_requests == [] and page.blocked == []
    [image] = page.images
    assert image.src == uri[:40]
    assert (image.complete, image.natural_width, image.natural_height) == (True, 120, 60) and image.loaded
    triad = page.headlines["triad_bandwidth_bytes_per_second"]
    assert (triad.text, triad.value, triad.data["run"]) == ("37.1 GB/s", "3.71e10", "7")
    assert (page.headlines["latency_seconds"].text, page.headlines["latency_seconds"].value) == ("90 ns", None)
    width, height = png_size(shot)  # the whole page, not the 1280×720 viewport
    assert width == 1280 and height > 2400


def test_console_error_is_reported(browser, tmp_path):
    page = browser.open(write(tmp_path, "<script>console.warn('only a warning'); console.error('plot 3 missing')</script>"))
    assert len(page.console_errors) == 1
    assert page.console_errors[0].startswith("console.error: plot 3 missing (file://")
    assert page.problems == [f"console: {page.console_errors[0]}"]


def test_uncaught_exceptions_are_reported(browser, tmp_path):
    page = browser.open(write(tmp_path, "<script>null.x</script><script>setTimeout(() => { throw new RangeError('late') })"
                                        "</script>"))
    assert page.console_errors[0].startswith("uncaught TypeError: Cannot read properties of null")
    assert page.console_errors[1:] == ["uncaught RangeError: late"]


def test_broken_image_is_reported(browser, tmp_path):
    page = browser.open(write(tmp_path, f'<img src="data:image/png;base64,AAAA"><img src="{png_data_uri()}">'))
    broken, good = page.images
    assert (broken.src, broken.complete, broken.natural_width, broken.loaded) == \
        ("data:image/png;base64,AAAA", True, 0, False)
    assert good.loaded
    assert page.problems == ["image not loaded: data:image/png;base64,AAAA"]


@pytest.mark.parametrize("markup, url", [
    ('<img src="https://example.com/x.png">', "https://example.com/x.png"),
    ('<link rel="stylesheet" href="http://example.com/style.css">', "http://example.com/style.css"),
    ("<script>fetch('https://example.com/data.json').catch(() => {})</script>", "https://example.com/data.json"),
    ("<script>new WebSocket('wss://example.com/live')</script>", "wss://example.com/live"),
])
def test_network_requests_are_recorded_and_blocked(browser, tmp_path, markup, url):
    page = browser.open(write(tmp_path, markup))
    assert page.blocked == [url] and page.foreign_requests == [url]
    assert f"request for another resource: {url}" in page.problems
    if not url.startswith("wss:"):
        assert f"request failed: {url}: net::ERR_BLOCKED_BY_CLIENT.Inspector" in page.console_errors


def test_another_local_file_is_a_foreign_request(browser, tmp_path):
    (tmp_path / "plot.png").write_bytes(base64.b64decode(png_data_uri().split(",")[1]))
    page = browser.open(write(tmp_path, '<img src="plot.png">'))
    assert page.images[0].loaded and page.blocked == [] and page.console_errors == []
    assert page.foreign_requests == [(tmp_path / "plot.png").as_uri()]


def test_repeated_headline_keys_need_all_headlines(browser, tmp_path):
    page = browser.open(write(tmp_path, '<b data-headline="copy" data-value="1">1 B/s</b>'
                                        '<b data-headline="copy" data-value="2">2 B/s</b>'))
    assert [(h.key, h.text, h.value) for h in page.all_headlines] == [("copy", "1 B/s", "1"), ("copy", "2 B/s", "2")]
    with pytest.raises(ValueError, match="headline keys shown more than once: copy"):
        page.headlines


def test_a_missing_file_is_a_bad_file(browser, tmp_path):
    with pytest.raises(BadFile, match="no-such.html: no such file"):
        browser.open(tmp_path / "no-such.html")
