"""A report page printed to PDF by the system's Chromium through Playwright, offline.

The page is handed to the browser as HTML (no login, no request back to this server) at an
address that cannot resolve; every request the page makes is answered here: the page itself,
and the static files it names (plotly.js, the stylesheet) from the installation. Anything else is
refused, so a report never reaches the network. The PDF is taken once the page says its charts
are drawn (`data-charts-ready` on <body>).

Everything, from waiting for a free printer to the last page, is within one deadline
(REPORT_PDF_TIMEOUT_S); gunicorn's worker timeout is above it (webapp/gunicorn.conf.py). Chromium
keeps its sandbox around the page (REPORT_PDF_SANDBOX) unless the web process runs as root,
where Chromium refuses it.
"""

import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from csp.utils import build_policy
from django.conf import settings
from django.contrib.staticfiles import finders
from django.utils.html import escape

ORIGIN = "http://report.invalid"
PAGE_PATH = "/report"
# Nothing in the background: no updates, no sync, no GPU (a server has none).
_OFFLINE = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Chromium is heavy (~150 MB each): a web process prints this many reports at a time.
_PRINTERS = threading.BoundedSemaphore(2)


class PDFError(Exception):
    """The PDF could not be made; the message says why and what to do."""


def _static_file(path: str) -> Path | None:
    prefix = "/" + settings.STATIC_URL.lstrip("/")
    if not path.startswith(prefix):
        return None
    name = unquote(path[len(prefix) :])
    found = finders.find(name)
    if found:
        return Path(found)
    collected = Path(settings.STATIC_ROOT, name).resolve()
    root = Path(settings.STATIC_ROOT).resolve()
    return collected if collected.is_relative_to(root) and collected.is_file() else None


def _answer(html: str):
    def handle(route):
        url = urlsplit(route.request.url)
        if f"{url.scheme}://{url.netloc}" != ORIGIN:
            route.abort("blockedbyclient")
        elif url.path == PAGE_PATH:
            # the site's own policy: a report that needs more than its pages do is refused
            route.fulfill(
                status=200,
                content_type="text/html; charset=utf-8",
                headers={"Content-Security-Policy": build_policy()},
                body=html,
            )
        elif (found := _static_file(url.path)) is not None:
            route.fulfill(status=200, path=found)
        else:
            route.fulfill(status=404, body="not part of a report")

    return handle


def _note_refusal(text: str, refused: list[str]) -> None:
    if "Content Security Policy" in text:
        refused.append(text)


def html_to_pdf(html: str, title: str) -> bytes:
    """The page as an A4 PDF, charts drawn. Raises PDFError with the reason."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    chromium = settings.CHROMIUM_PATH
    if not Path(chromium).is_file():
        raise PDFError(
            f"no Chromium at {chromium}: install Debian's chromium package or set CHROMIUM_PATH "
            "(the web page of the report prints from any browser)"
        )
    deadline = time.monotonic() + settings.REPORT_PDF_TIMEOUT_S

    def left_ms() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise PDFError(f"the report was not printed within {settings.REPORT_PDF_TIMEOUT_S} s")
        return left * 1000

    if not _PRINTERS.acquire(timeout=left_ms() / 1000):
        raise PDFError("too many reports are being printed at once; try again in a minute")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium,
                args=_OFFLINE,
                chromium_sandbox=settings.REPORT_PDF_SANDBOX,
                timeout=left_ms(),
            )
            try:
                page = browser.new_page()
                page.set_default_timeout(left_ms())  # page.pdf() takes no timeout of its own
                refused: list[str] = []
                page.on("console", lambda message: _note_refusal(message.text, refused))
                page.route("**/*", _answer(html))
                page.goto(ORIGIN + PAGE_PATH, timeout=left_ms())
                # a function, not an expression: Playwright evaluates a bare expression with eval,
                # which the page's policy refuses
                page.wait_for_function("() => document.body.dataset.chartsReady", timeout=left_ms())
                ready = page.evaluate("document.body.dataset.chartsReady")
                if ready != "yes":
                    raise PDFError(f"the report's charts were not drawn ({ready})")
                if refused:
                    raise PDFError(f"the report broke the content security policy: {refused[0][:300]}")
                return page.pdf(
                    format="A4",
                    print_background=True,
                    display_header_footer=True,
                    header_template="<span></span>",
                    footer_template=(
                        '<div style="font-size:8px;width:100%;padding:0 12mm;color:#666">'
                        f"{escape(title)}<span style='float:right'>page <span class='pageNumber'></span>"
                        " of <span class='totalPages'></span></span></div>"
                    ),
                    margin={"top": "12mm", "bottom": "16mm", "left": "12mm", "right": "12mm"},
                )
            finally:
                browser.close()
    except PlaywrightError as exc:
        raise PDFError(f"Chromium could not print the report: {str(exc).splitlines()[0]}") from exc
    finally:
        _PRINTERS.release()
