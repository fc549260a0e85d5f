"""A report page printed to PDF by the system's Chromium through Playwright, offline.

The page is handed to the browser as HTML (no login, no request back to this server) at an
address that cannot resolve; every request the page makes is answered here: the page itself,
and the static files it names (plotly.js, the stylesheet) from the installation. Anything else is
refused, so a report never reaches the network. The PDF is taken once the page says its charts
are drawn (`data-charts-ready` on <body>).

One Chromium per web process prints every report, one after the other in the same tab (a new
document each), and is closed after IDLE_S without one: starting Playwright and Chromium, and
compiling plotly.js in a new tab, had been half of each PDF's time (docs/benchmarks.md).
Playwright's synchronous API answers only the thread that started it, so the browser lives in a
thread of its own (the printer) and reports queue for it; a browser that died is started again
for the next report.

Everything, from waiting for the printer to the last page, is within one deadline
(REPORT_PDF_TIMEOUT_S); gunicorn's worker timeout is above it (webapp/gunicorn.conf.py). Chromium
keeps its sandbox around the page (REPORT_PDF_SANDBOX) unless the web process runs as root,
where Chromium refuses it.
"""

import atexit
import contextlib
import queue
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from urllib.parse import unquote, urlsplit

from csp.utils import build_policy
from django.conf import settings
from django.contrib.staticfiles import finders
from django.utils.html import escape

ORIGIN = "http://report.invalid"
PAGE_PATH = "/report"
# Which Chromium this is, in ps.
PRINTER_CLASS = "--class=recovery-lab-report-printer"
# Nothing in the background: no updates, no sync, no GPU (a server has none).
_OFFLINE = [
    PRINTER_CLASS,
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Reports waiting for a web process' printer beyond this are refused at once, saying so.
MAX_WAITING = 2
# A printer with nothing to print this long closes its Chromium (~150 MB).
IDLE_S = 300


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


def _answer(html):
    """Answers a report page's requests; `html()` is the report it is printing."""

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
                body=html(),
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
    chromium = settings.CHROMIUM_PATH
    if not Path(chromium).is_file():
        raise PDFError(
            f"no Chromium at {chromium}: install Debian's chromium package or set CHROMIUM_PATH "
            "(the web page of the report prints from any browser)"
        )
    deadline = time.monotonic() + settings.REPORT_PDF_TIMEOUT_S
    printed = _PRINTER.submit(html, title, deadline)
    try:
        return printed.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        printed.cancel()
        raise PDFError(f"the report was not printed within {settings.REPORT_PDF_TIMEOUT_S} s") from None


class _Printer:
    """The thread that owns this process' Playwright and Chromium, and prints the queued reports."""

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.launches = 0  # Chromiums started, for the tests

    def submit(self, html: str, title: str, deadline: float) -> Future:
        printed: Future = Future()
        with self.lock:
            if self.jobs.qsize() >= MAX_WAITING:
                raise PDFError("too many reports are being printed at once; try again in a minute")
            self.jobs.put((html, title, deadline, printed))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._serve, name="pdf-printer", daemon=True)
                self.thread.start()
        return printed

    def stop(self) -> None:
        with self.lock:
            thread = self.thread
        if thread is not None and thread.is_alive():
            self.jobs.put(None)
            thread.join(timeout=10)

    def _serve(self) -> None:
        from playwright.sync_api import sync_playwright

        playwright = browser = tab = None
        try:
            while True:
                try:
                    job = self.jobs.get(timeout=IDLE_S)
                except queue.Empty:
                    with self.lock:  # nothing came: close, unless a report just arrived
                        if self.jobs.empty():
                            self.thread = None
                            return
                    continue
                if job is None:
                    return
                html, title, deadline, printed = job
                if not printed.set_running_or_notify_cancel():
                    continue  # its request gave up waiting
                for attempt in (1, 2):  # a Chromium found dead is started again, once
                    try:
                        if browser is None or not browser.is_connected():
                            playwright = playwright or sync_playwright().start()
                            browser, tab = self._launch(playwright, deadline), None
                        tab = tab or _Tab(browser)
                        printed.set_result(tab.print(html, title, deadline))
                        break
                    except Exception as exc:  # the request is told; the printer goes on
                        if tab is not None:  # a report that failed leaves no tab behind
                            tab.close()
                            tab = None
                        dead = browser is not None and not browser.is_connected()
                        if dead:
                            browser = None
                        if not (dead and attempt == 1):
                            printed.set_exception(_as_pdf_error(exc))
                            break
        finally:
            if browser is not None and browser.is_connected():
                browser.close()
            if playwright is not None:
                playwright.stop()

    def _launch(self, playwright, deadline: float):
        self.launches += 1
        return playwright.chromium.launch(
            executable_path=settings.CHROMIUM_PATH,
            args=_OFFLINE,
            chromium_sandbox=settings.REPORT_PDF_SANDBOX,
            timeout=_left_ms(deadline),
        )


def _left_ms(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise PDFError(f"the report was not printed within {settings.REPORT_PDF_TIMEOUT_S} s")
    return left * 1000


def _as_pdf_error(exc: Exception) -> PDFError:
    from playwright.sync_api import Error as PlaywrightError

    if isinstance(exc, PDFError):
        return exc
    if isinstance(exc, PlaywrightError):
        return PDFError(f"Chromium could not print the report: {str(exc).splitlines()[0]}")
    return PDFError(f"the report could not be printed: {exc}")


class _Tab:
    """The printer's tab, kept from one report to the next: loading the next report in the same tab
    finds plotly.js compiled, where a new tab compiled it again (0.8 s of each PDF). Each report is
    a new document at an address of its own; nothing carries over but the compiled code."""

    def __init__(self, browser):
        self.page = browser.new_page()
        self.html = ""
        self.refused: list[str] = []
        self.printed = 0
        self.page.on("console", lambda message: _note_refusal(message.text, self.refused))
        self.page.route("**/*", _answer(lambda: self.html))

    def print(self, html: str, title: str, deadline: float) -> bytes:
        page = self.page
        self.html, self.refused[:] = html, []
        self.printed += 1
        page.set_default_timeout(_left_ms(deadline))  # page.pdf() takes no timeout of its own
        page.goto(f"{ORIGIN}{PAGE_PATH}?{self.printed}", timeout=_left_ms(deadline))
        # a function, not an expression: Playwright evaluates a bare expression with eval, which
        # the page's policy refuses
        page.wait_for_function("() => document.body.dataset.chartsReady", timeout=_left_ms(deadline))
        ready = page.evaluate("document.body.dataset.chartsReady")
        if ready != "yes":
            raise PDFError(f"the report's charts were not drawn ({ready})")
        if self.refused:
            raise PDFError(f"the report broke the content security policy: {self.refused[0][:300]}")
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

    def close(self) -> None:
        from playwright.sync_api import Error as PlaywrightError

        with contextlib.suppress(PlaywrightError):  # a Chromium that died took its tabs along
            self.page.close()


_PRINTER = _Printer()
atexit.register(_PRINTER.stop)  # Chromium closed with the process, not left to the driver
