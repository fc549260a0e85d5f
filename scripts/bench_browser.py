"""`make bench`, browser part: what a person waits for in Debian's headless Chromium, against the
web process as `make start` runs it (gunicorn, 2 workers) over the 100,000-run history of
bench_analysis.py: from the navigation's start to the experiment page's first chart drawn, and to
explore's WebGL figure drawn; and the report PDF of that experiment, made on the server. Warm (a
first load not counted), the median and the worst of REPEATS.
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_analysis import FILL_SQL, RUNS  # noqa: E402
from bench_load import answers, free_port  # noqa: E402
from benchlib import BIN, database_url, fresh_database, psql, start, stop, wait_until  # noqa: E402

BENCH_DB = "recovery_lab_bench_browser"
BENCH_URL = database_url(BENCH_DB)
WORK_DIR = "/var/tmp/recovery-lab-bench-browser"
REPEATS = 7
CHART_TARGET_S, PDF_TARGET_S = 0.5, 3.0


def drawn(page, url: str, selector: str) -> float:
    """Seconds from the navigation's start until `selector` is in the page (performance.now())."""
    page.goto(url, wait_until="commit")
    page.wait_for_selector(selector, timeout=30_000)
    return page.evaluate("performance.now()") / 1000


def line(label: str, times: list[float], target: float) -> bool:
    met = statistics.median(times) <= target
    print(
        f"  {label:<58} median {statistics.median(times) * 1000:7.0f} ms   worst {max(times) * 1000:7.0f} ms"
        f"   target <= {target * 1000:.0f} ms: {'met' if met else 'NOT met'}"
    )
    return met


def main() -> None:
    print(f"\nIn the browser (Chromium, headless; {RUNS:,} runs of history; median and worst of {REPEATS})")
    env = {
        **os.environ,
        "DATABASE_URL": BENCH_URL,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "ALLOWED_HOSTS": "127.0.0.1",
        "RUNNER_WORK_DIR": WORK_DIR,
    }
    os.environ.update(env)
    fresh_database(BENCH_DB)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"], check=True
    )
    psql("-c", FILL_SQL, url=BENCH_URL)

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from playwright.sync_api import sync_playwright

    from experiments.models import Experiment

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    session = client.cookies["sessionid"].value
    experiment = Experiment.objects.order_by("-id").first()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    Path(WORK_DIR).mkdir(parents=True, exist_ok=True)
    log = Path(f"{WORK_DIR}.web.log")
    web = start(
        [str(BIN / "gunicorn"), "-c", "webapp/gunicorn.conf.py", "-b", f"127.0.0.1:{port}", "-w", "2"],
        log,
        env,
    )
    try:
        wait_until(lambda: answers(f"{base}/login/"), 120, "the web process", web, logs=str(log))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=settings.CHROMIUM_PATH)
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
            page = context.new_page()
            pages = {
                "experiment page: its first chart drawn": (
                    f"{base}/experiments/{experiment.id}/",
                    "#charts .main-svg",
                ),
                "explore (99,500 points): its WebGL figure drawn": (
                    f"{base}/explore/?x=redo_bytes&y=recovery_seconds&group=engine",
                    "#explore-chart .gl-container canvas, #explore-chart canvas",
                ),
            }
            for label, (url, selector) in pages.items():
                drawn(page, url, selector)  # warm
                line(label, [drawn(page, url, selector) for _ in range(REPEATS)], CHART_TARGET_S)
            browser.close()
        import requests

        pdf_times = []
        for _ in range(3):
            started = time.perf_counter()
            answer = requests.get(
                f"{base}/experiments/{experiment.id}/report.pdf", cookies={"sessionid": session}, timeout=120
            )
            assert answer.status_code == 200 and answer.content.startswith(b"%PDF"), answer.status_code
            pdf_times.append(time.perf_counter() - started)
        line(f"the report PDF of that {experiment.runs.count()}-run experiment", pdf_times, PDF_TARGET_S)
    finally:
        stop(web)


if __name__ == "__main__":
    main()
