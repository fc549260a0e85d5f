"""recovery-lab: the REST API's client, for scripts and CI. No Django: it talks HTTP only.

    recovery-lab run DEFINITION.yaml [--wait]      define an experiment (YAML or JSON), follow it
    recovery-lab wait ID                           follow an experiment until it finishes
    recovery-lab compare A B                       the matched cells of two experiments, B against A
    recovery-lab export ID [--format csv|archive]  its runs as CSV, or the whole experiment
    recovery-lab gate DEFINITION --baseline ID --max-slowdown 10%
                                                   run the definition, compare it with the baseline,
                                                   fail on a significant slowdown beyond the threshold
    recovery-lab predict --lab-host NAME [--rto 30s]  (the server's address in RECOVERY_LAB_SERVER)
                                                   a live server's downtime if it crashed now and at
                                                   the worst its redo capacity allows, from the lab
    recovery-lab predict --lab-host NAME --measure [--wait]
                                                   and queue the lab runs that would stand for this
                                                   server (its build, buffer pool, log, durability)
    recovery-lab exporter --lab-host NAME --listen HOST:PORT [--web-config FILE]
                                                   the same as Prometheus metrics, read at each scrape

The server is RECOVERY_LAB_URL (or --url), the token RECOVERY_LAB_TOKEN or the first line of
--token-file (made on the page /account/token/): never an argument, which every user of the
machine sees in ps. The definition is checked by the server's own rules: a bad one
is refused with a message per field and nothing is queued.

Exit codes: 0 done (the gate passed); 1 the gate found a regression (a slowdown the statistics
call significant, beyond the threshold); 2 nothing could be decided (bad definition, the server
unreachable or refusing the token, no run finished, no cell matching the baseline, too few runs
for an interval, runs measured on a disturbed host unless --decide-on-disturbed-host); 3 `run
--wait` / `wait`: the experiment finished but some of its runs failed.
predict, on a crash now (--decide-on worst: at the worst case): 0 within --rto (the 95% interval
under it; or no --rto), 4 at risk (--rto inside the interval), 2 exceeded (the interval over it),
5 stall risk (the lab saw this buffer pool's recovery stall short of this redo), 3 no answer (the
server unreadable, the lab without comparable runs, the dashboard unreachable).
The live server's address (with its password) comes from RECOVERY_LAB_SERVER or the first line of
--server-file, never from an argument.
"""

import argparse
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from recovery_lab_cli import lab_request, production
from recovery_lab_cli.live import read_server
from recovery_lab_cli.server_url import DEFAULT_ENGINE_OF, LiveError, parse_server_url
from recovery_lab_cli.units import resolution_note
from recovery_lab_cli.yaml_input import YamlRefused, load_plain_yaml
from runner.contract import ENGINES as RUNNER_ENGINES
from runner.contract import UNSAID_DEFAULTS

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR, EXIT_RUNS_FAILED = 0, 1, 2, 3
FINISHED = ("done", "partial", "failed", "cancelled")
DEFAULT_METRICS = ("recovery_seconds",)
# Parameters a stored definition leaves out unless named, and what their absence means.
UNSTORED_DEFAULTS = UNSAID_DEFAULTS
THRESHOLD = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(%?)\s*$")
# A refused connection or a 502/503/504 is tried again this many times, with backoff (~1 min).
DEFAULT_RETRIES = 6


class ClientError(Exception):
    """Something the user can act on, said in one message; exit code 2."""


class Api:
    """The REST API with a token. Connection errors and 502/503/504 (a web server restarting
    during a long wait) are retried with backoff; POSTs carry an Idempotency-Key, so a retried
    one never creates a second experiment."""

    def __init__(self, url: str, token: str, timeout_s: float = 60, retries: int = DEFAULT_RETRIES):
        if not url:
            raise ClientError("no server: set RECOVERY_LAB_URL (e.g. http://127.0.0.1:8000) or pass --url")
        if not token:
            raise ClientError(
                "no token: set RECOVERY_LAB_TOKEN (make one on the dashboard's page /account/token/, "
                "your name at the top right) or give --token-file FILE"
            )
        self.url, self.timeout_s, self.retries = url.rstrip("/"), timeout_s, retries
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})
        retry = Retry(
            total=retries,
            backoff_factor=1,
            status_forcelist=(502, 503, 504),
            allowed_methods=frozenset({"GET", "POST"}),
            raise_on_status=False,
        )
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session.mount("https://", HTTPAdapter(max_retries=retry))

    def request(self, method: str, path: str, **options) -> requests.Response:
        try:
            response = self.session.request(method, self.url + path, timeout=self.timeout_s, **options)
        except requests.RequestException as exc:
            raise ClientError(f"cannot reach {self.url} (tried {self.retries + 1} times): {exc}") from None
        if response.status_code in (401, 403):
            raise ClientError(
                f"{self.url} refused the token (HTTP {response.status_code}: {_said(response)}): check "
                "RECOVERY_LAB_TOKEN, and that its user may do this"
            )
        if response.status_code == 404:  # with what the API said, where it said more than that
            said = (
                _said(response)
                if response.headers.get("Content-Type", "").startswith("application/json")
                else ""
            )
            why = f": {said}" if said and said != "Not found." else ""
            raise ClientError(f"{path}: not found on {self.url}{why}")
        if response.status_code >= 400:
            raise ClientError(f"{method} {path}: HTTP {response.status_code}: {_said(response)}")
        return response

    def get(self, path: str, **params) -> dict:
        return self.request("GET", path, params=params).json()

    def post(self, path: str, body: dict | None = None, key: str = "") -> dict:
        headers = {"Idempotency-Key": key} if key else {}
        return self.request("POST", path, json=body, headers=headers).json()

    def page(self, path: str) -> str:
        """The web page address of an API object, for a person to open."""
        return self.url + path


def _said(response: requests.Response) -> str:
    """What the server said, in one line: field messages of a 400 as 'field: message'."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason
    if isinstance(body, dict):
        parts = []
        for field, messages in body.items():
            text = "; ".join(map(str, messages)) if isinstance(messages, list) else str(messages)
            parts.append(text if field in ("detail", "non_field_errors") else f"{field}: {text}")
        return " | ".join(parts)[:2000]
    return str(body)[:2000]


def load_definition(path: str) -> dict:
    """A definition file, YAML or JSON (JSON is YAML)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ClientError(f"cannot read the definition {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ClientError(f"the definition {path} is not text (UTF-8)") from None
    try:
        definition = load_plain_yaml(text)
    except YamlRefused as exc:
        raise ClientError(f"the definition {path} is not taken: {exc}") from None
    if not isinstance(definition, dict):
        raise ClientError(f"the definition {path} must be a mapping (name, hosts, engines, ...)")
    return definition


def parse_threshold(text: str) -> float:
    """'10%' or '0.1' -> 0.1."""
    found = THRESHOLD.match(text or "")
    if not found:
        raise ClientError(f"--max-slowdown {text!r}: a share like 10% or 0.1")
    value = float(found.group(1)) / (100 if found.group(2) else 1)
    if not 0 <= value <= 10:
        raise ClientError(f"--max-slowdown {text!r}: between 0% and 1000%")
    return value


def submit(api: Api, definition: dict, key: str, out) -> dict:
    experiment = api.post("/api/experiments/", definition, key=key or f"cli-{uuid.uuid4()}")
    runs, page = len(experiment.get("runs", [])), api.page(f"/experiments/{experiment['id']}/")
    print(f"experiment {experiment['id']} ({runs} runs) queued: {page}", file=out)
    return experiment


def wait(api: Api, experiment_id: int, timeout_s: float, poll_s: float, out, cancel: bool = True) -> dict:
    """Poll the experiment until it finishes, a line on `out` whenever its runs move on. At the
    timeout the experiment is cancelled (a host left running it would hold up the next ones),
    unless `cancel` is false (another's experiment, a gate's baseline: left to run)."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    said = ""
    while True:
        experiment = api.get(f"/api/experiments/{experiment_id}/")
        runs = experiment.get("runs", [])
        counts = {
            status: sum(r["status"] == status for r in runs)
            for status in ("done", "failed", "running", "stalled")
        }
        line = (
            f"experiment {experiment_id}: {experiment['status']}, {counts['done']} of {len(runs)} runs done"
            + (f", {counts['failed']} failed" if counts["failed"] else "")
            + (f", {counts['stalled']} stalled (recovery stopped moving)" if counts["stalled"] else "")
            + (f", {counts['running']} running" if counts["running"] else "")
        )
        if line != said:
            print(line, file=out, flush=True)
            said = line
        if experiment["status"] in FINISHED:
            return experiment
        if deadline is not None and time.monotonic() > deadline:
            if not cancel:
                raise ClientError(
                    f"experiment {experiment_id} did not finish within {timeout_s:g} s (left running; "
                    "raise --timeout to wait longer)"
                )
            api.post(f"/api/experiments/{experiment_id}/cancel/")
            raise ClientError(
                f"experiment {experiment_id} did not finish within {timeout_s:.0f} s: cancelled "
                "(raise --timeout for longer experiments)"
            )
        time.sleep(poll_s)  # the API has no push: ask again in a while


def runs_table(experiment: dict) -> str:
    rows = []
    for run in experiment.get("runs", []):
        metrics = run.get("metrics") or {}
        settings = " ".join(
            f"{k}={v}" for k, v in sorted({**run["parameters"], **run["server_options"]}.items())
        )
        rows.append(
            [
                str(run["id"]),
                run["engine"],
                settings,
                str(run["repetition"]),
                run["status"],
                _number(metrics.get("recovery_seconds")),
                _number(metrics.get("downtime_seconds")),
                _number(metrics.get("redo_bytes"), bytes_=True),
                (run.get("error") or "").splitlines()[0][:80]
                if run["status"] in ("failed", "stalled")
                else "",
            ]
        )
    headers = ["run", "engine", "settings", "rep", "status", "recovery s", "downtime s", "redo", "error"]
    return table(headers, rows)


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain text table, columns as wide as their widest cell."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells):
        return "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _number(value, bytes_: bool = False) -> str:
    if value is None:
        return "-"
    if bytes_:
        return f"{value / 2**20:,.1f}M"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def verdict(block: dict, threshold: float) -> tuple[str, bool]:
    """How B compares with A on one metric (less is better), and whether it is a regression:
    significant (Welch, 95%, beyond the noise floor) and slower beyond the threshold."""
    ratio, ci = block.get("ratio"), block.get("ratio_ci")
    if ratio is None:
        return "not compared: no values on one side", False
    if ci is None:
        return f"no interval: {block.get('no_interval') or 'fewer than 2 runs a side'}", False
    if not block.get("significant"):
        could = block.get("detectable")
        seen = longer_text(ratio) + (f"; only beyond {could:,.2f}x could have been called" if could else "")
        if block.get("too_few"):  # runs that could not have seen a doubling: said, and on a pass
            return f"too few runs to tell ({seen})", False
        return f"no significant difference ({seen})", False
    if ratio > 1 + threshold:
        beyond = f" beyond {threshold:.0%}" if threshold else ""
        return f"REGRESSION: B slower{beyond}, {ratio:.2f}x as long as A", True
    if ratio > 1:
        return f"slower, within {threshold:.0%}", False
    return "faster", False


def of_geometric_means(block: dict) -> str:
    """Where the medians in the A and B columns point the other way from B/A: the geometric means
    B/A is of, which agree with it (a 1.08x had stood beside medians of 0.327 and 0.414 s)."""
    typical, medians, ratio = block.get("typical"), block.get("medians"), block.get("ratio")
    if not typical or not medians or not all(medians) or not ratio:
        return ""
    if (medians[1] / medians[0] - 1) * (ratio - 1) >= 0:
        return ""
    means = f"A {typical[0]:.3g} and B {typical[1]:.3g}"
    return f" (B/A is of geometric means, {means}; the medians point the other way)"


def longer_text(ratio: float) -> str:
    """Which side took longer, in words: the ratio alone follows the columns' order."""
    return f"B {ratio:.2f}x as long as A" if ratio >= 1 else f"A {1 / ratio:.2f}x as long as B"


UNDECIDED = ("not compared", "no interval", "undecided")


def comparison_rows(
    result: dict, metrics: list[str], threshold: float, decide_disturbed: bool = True
) -> tuple[list[list[str]], int, int]:
    """The table a reviewer reads (a row per cell and metric), how many rows are regressions and
    how many could not be decided (no values, or too few runs for an interval; for the gate,
    unless `decide_disturbed`, runs measured on a disturbed host: other work can make a
    difference, or hide one)."""
    first, second = (str(i) for i in result["experiments"][:2])
    rows, regressions, undecided = [], 0, 0
    for cell in result["cells"]:
        settings = " ".join(
            f"{k}={v}" for k, v in sorted({**cell["parameters"], **cell["server_options"]}.items())
        )
        changed = _changed_text(cell.get("ignored_values") or {}, first, second)
        for metric in metrics:
            block = cell["metrics"].get(metric)
            if not block:
                continue
            said, regression = verdict(block, threshold)
            said += resolution_note(block) + of_geometric_means(block)
            if not cell.get("comparable", True):  # a recovery after another crash: another measurement
                said, regression = "not compared: the crash plans differ", False
            elif cell.get("disturbed_runs") and not decide_disturbed and not said.startswith(UNDECIDED):
                measured = f"; measured {longer_text(block['ratio'])}" if block.get("ratio") else ""
                said = f"undecided: host disturbed in {cell['disturbed_runs']} runs{measured}"
                regression = False
            elif cell.get("disturbed_runs"):
                said += f" (host disturbed in {cell['disturbed_runs']} runs)"
            if metric == "downtime_seconds" and (cell.get("startup_change") or {}).get(second):
                said += f"; {cell['startup_change'][second]}"  # the gated metric still decides
            regressions += regression
            undecided += said.startswith(UNDECIDED)
            ci = block.get("ratio_ci")
            rows.append(
                [
                    cell["engine"],
                    settings or "-",
                    changed or "-",
                    metric,
                    _side(block.get(first)),
                    _side(block.get(second)),
                    f"{block['ratio']:.2f}x" if block.get("ratio") is not None else "-",
                    f"{ci[0]:.2f}-{ci[1]:.2f}x" if ci else "-",
                    p_text(block),
                    said,
                ]
            )
    return rows, regressions, undecided


def p_text(block: dict) -> str:
    """The test's p, and where it is one of several on the page, its adjusted p beside it."""
    if block.get("p_value") is None:
        return "-"
    if block.get("p_adjusted") is not None and (block.get("family") or 1) > 1:
        return f"{block['p_value']:.3g} ({block['p_adjusted']:.3g} of {block['family']})"
    return f"{block['p_value']:.3g}"


def _side(summary: dict | None) -> str:
    if not summary or summary.get("median") is None:
        return "-"
    return f"{summary['median']:.3f} (n={summary['n']})"


def _changed_text(values: dict, first: str, second: str) -> str:
    """'buffer_pool_size 1G -> 64M' for the settings left out of the match."""
    parts = []
    for name in sorted(set(values.get(first, {})) | set(values.get(second, {}))):
        before = ",".join(values.get(first, {}).get(name, ["-"]))
        after = ",".join(values.get(second, {}).get(name, ["-"]))
        parts.append(f"{name} {before} -> {after}")
    return "; ".join(parts)


def differences_text(result: dict) -> str:
    """What differs between the definitions compared, a line each, and how far apart they ran."""
    lines = [f"  {d['text']}" for d in result.get("differences") or []]
    said = "the definitions differ:\n" + "\n".join(lines) if lines else "the definitions are the same"
    versions = result.get("server_versions") or {}
    if len({version for version in versions.values() if version}) > 1:  # measured, not defined
        said += "\nthe servers reported: " + ", ".join(f"{v or '-'} in #{i}" for i, v in versions.items())
    return said + (f"\nthey {result['apart']}" if result.get("apart") else "")


COMPARISON_HEADERS = [
    "engine", "matched on", "changed", "metric", "A", "B", "B/A", "95% CI", "p (adjusted of n)", "verdict"
]  # fmt: skip


def compare(
    api: Api, first: int, second: int, metrics: list[str], threshold: float, ignore=(), decide_disturbed=True
) -> tuple:
    # the p-values adjusted over the metrics decided on, not every metric the page shows
    result = api.get(
        "/api/compare/",
        experiments=f"{first},{second}",
        ignore=",".join(sorted(ignore)),
        tested=",".join(metrics),
    )
    return result, *comparison_rows(result, metrics, threshold, decide_disturbed)


def changed_settings(baseline: dict, candidate: dict) -> list[str]:
    """Parameters and server options whose values differ between two definitions: the change
    the gate measures, left out of the match. Each must hold one value a side: a sweep would pool
    runs of different settings into one cell. A parameter only one side states is compared once
    both are stored (the server fills in defaults), but server_build, which is stored only when
    named, is the system's build when absent."""
    changed = []
    for part in ("parameters", "server_options"):
        before, after = baseline.get(part) or {}, candidate.get(part) or {}
        for name in sorted(set(before) | set(after)):
            absent = UNSTORED_DEFAULTS.get(name) if part == "parameters" else None
            old, new = _values(before.get(name, absent)), _values(after.get(name, absent))
            if old == new or (part == "parameters" and not (old and new)):
                continue
            if len(old) > 1 or len(new) > 1:
                raise ClientError(
                    f"{part}.{name} differs from the baseline's and takes several values "
                    f"({', '.join(old) or '-'} against {', '.join(new) or '-'}): the gate measures one "
                    "change against the baseline, give it one value on each side"
                )
            changed.append(name)
    return changed


def _values(raw) -> list[str]:
    if raw is None:
        return []
    return sorted(str(v) for v in (raw if isinstance(raw, list) else [raw]))


def command_run(api: Api, args, out) -> int:
    experiment = submit(api, load_definition(args.definition), args.key, out)
    if not args.wait:
        return EXIT_OK
    return _finished(wait(api, experiment["id"], args.timeout, args.poll, out), out)


def command_wait(api: Api, args, out) -> int:
    return _finished(wait(api, args.experiment, args.timeout, args.poll, out), out)


def _finished(experiment: dict, out) -> int:
    print(runs_table(experiment), file=out)
    return EXIT_OK if experiment["status"] == "done" else EXIT_RUNS_FAILED


def command_compare(api: Api, args, out) -> int:
    result, rows, _, _ = compare(api, args.a, args.b, args.metric or list(DEFAULT_METRICS), 0.0, args.ignore)
    if args.json:
        print(json.dumps(result, indent=2), file=out)
        return EXIT_OK
    if not rows:
        raise ClientError(no_cell_in_common(args.a, args.b, result.get("leave_out") or []))
    print(f"A = experiment {args.a}, B = experiment {args.b}", file=out)
    print(differences_text(result), file=out)
    print(table(COMPARISON_HEADERS, rows), file=out)
    return EXIT_OK


def no_cell_in_common(first: int, second: int, leave_out: list[str]) -> str:
    """What the compare page says where nothing matched: which settings differ, and how to leave
    them out of the match."""
    said = f"experiments {first} and {second} have no cell in common (engine and settings)"
    if not leave_out:
        return said
    names = ", ".join(leave_out)
    flags = " ".join(f"--ignore {name}" for name in leave_out)
    return f"{said}: they differ in {names}; {flags} compares them with it as the change under test"


def command_export(api: Api, args, out) -> int:
    if args.format == "csv":
        response = api.request(
            "GET",
            "/api/runs/",
            params={"experiment": args.experiment, "format": "csv"},
            headers={"Accept": "text/csv"},
        )
        default = None
    else:
        response = api.request(
            "GET", f"/api/experiments/{args.experiment}/export/", stream=True, headers={"Accept": "*/*"}
        )
        default = f"experiment-{args.experiment}.tar.gz"
    target = args.output or default
    if target is None:
        out.write(response.text)
        return EXIT_OK
    with open(target, "wb") as handle:
        for chunk in response.iter_content(1 << 20):
            handle.write(chunk)
    print(f"wrote {target}", file=sys.stderr)
    return EXIT_OK


def command_gate(api: Api, args, out) -> int:
    threshold = parse_threshold(args.max_slowdown)
    definition = load_definition(args.definition)
    metrics = args.metric or list(DEFAULT_METRICS)
    baseline = api.get(f"/api/experiments/{args.baseline}/")
    if baseline["status"] not in FINISHED:
        if not args.wait:
            raise ClientError(
                f"the baseline, experiment {args.baseline}, is still {baseline['status']}: pass --wait to "
                "wait for it to finish first"
            )
        print(f"waiting for the baseline, experiment {args.baseline}, to finish", file=out, flush=True)
        wait(api, args.baseline, args.timeout, args.poll, out, cancel=False)
        baseline = api.get(f"/api/experiments/{args.baseline}/")
    changed_settings(baseline.get("definition") or {}, definition)  # a sweep is refused before queueing
    experiment = submit(api, definition, args.key, out)
    # as stored: the server's defaults filled in on both sides
    changed = changed_settings(baseline.get("definition") or {}, experiment.get("definition") or definition)
    finished = wait(api, experiment["id"], args.timeout, args.poll, out)
    if not any(run["status"] == "done" for run in finished["runs"]):
        print(runs_table(finished), file=out)
        raise ClientError(f"no run of experiment {experiment['id']} finished: nothing to compare")
    result, rows, regressions, undecided = compare(
        api, args.baseline, experiment["id"], metrics, threshold, changed, args.decide_on_disturbed_host
    )
    if not rows:
        raise ClientError(
            f"no cell of experiment {experiment['id']} matches one of the baseline {args.baseline} "
            f"(engine and settings{', less ' + ', '.join(changed) if changed else ''}): nothing to compare"
        )
    print(f"\nA = baseline, experiment {args.baseline}; B = experiment {experiment['id']}", file=out)
    if changed:
        print(f"changed from the baseline (left out of the match): {', '.join(changed)}", file=out)
    print(differences_text(result), file=out)
    print(table(COMPARISON_HEADERS, rows), file=out)
    failed_runs = sum(run["status"] == "failed" for run in finished["runs"])
    if failed_runs:
        print(f"note: {failed_runs} run(s) of experiment {experiment['id']} failed", file=out)
    if regressions:
        ignored = f"&ignore={','.join(changed)}" if changed else ""
        page = api.page(f"/compare/?experiments={args.baseline},{experiment['id']}{ignored}")
        print(f"\nFAIL: {regressions} significant slowdown(s) beyond {threshold:.0%} ({page})", file=out)
        return EXIT_REGRESSION
    refuse_to_pass(result, rows, undecided)
    blind = sum(row[-1].startswith("too few runs to tell") for row in rows)
    weak = f" ({blind} of {len(rows)} comparisons had too few runs to tell: see their rows)" if blind else ""
    print(f"\nPASS: no significant slowdown beyond {threshold:.0%}{weak}", file=out)
    return EXIT_OK


def refuse_to_pass(result: dict, rows: list[list[str]], undecided: int) -> None:
    """Where no regression was found, why a pass would mean nothing, if it would: ClientError
    (exit 2, nothing decided) says so."""
    if any(not cell.get("comparable", True) for cell in result["cells"]):
        raise ClientError(
            "the crash plans of the baseline and this definition differ: a recovery after another "
            "crash is another measurement, so nothing was compared; gate against a baseline with the "
            "same crash plan"
        )
    disturbed = sum(row[-1].startswith("undecided: host disturbed") for row in rows)
    if disturbed:
        raise ClientError(
            f"nothing decided: {disturbed} comparison(s) stand on runs measured while other work used "
            "the host (their pages say what); rerun on a quiet host, or pass --decide-on-disturbed-host "
            "to take the verdict as measured"
        )
    if undecided:  # a pass must stand on intervals: one run a side can never be significant
        why = sorted({row[-1].split(" (host disturbed")[0] for row in rows if row[-1].startswith(UNDECIDED)})
        raise ClientError(
            f"{undecided} comparison(s) could not be decided ({'; '.join(why)}): a pass must stand on an "
            "interval; repeat the runs (3 or more repetitions), or measure more work where a run was "
            "shorter than its log resolves"
        )


SERIES_HEADERS = (
    "metric",
    "from firing",
    "scheduled for",
    "median before -> after",
    "ratio (95% CI)",
    "",
    "triage",
)


def command_series(api: Api, args, out) -> int:
    """A recurring series' change points, oldest first, with what differed at each."""
    series = api.get(f"/api/series/{args.series}/")
    if args.json:
        print(json.dumps(series, indent=2), file=out)
        return EXIT_OK
    points = {p["index"]: p for p in series["points"]}
    print(
        f"series {series['id']} {series['name']!r}: {len(series['points'])} firing(s), schedule "
        f"{series['schedule']}, next {series['next_firing_at'][:16].replace('T', ' ')} UTC",
        file=out,
    )
    if not series["change_points"]:
        print("no change point", file=out)
        return EXIT_OK
    rows = []
    for cp in series["change_points"]:
        interval = f" ({cp['ratio_low']:.2f}-{cp['ratio_high']:.2f})" if cp["ratio_low"] is not None else ""
        rows.append(
            [
                cp["metric"],
                str(cp["firing_index"]),
                points.get(cp["firing_index"], {}).get("scheduled") or "-",
                f"{cp['before_median']:.4g} -> {cp['after_median']:.4g}",
                f"{cp['ratio']:.2f}x{interval}",
                "worse" if cp["worse"] else "better",
                cp["triage"] + (f": {cp['note']}" if cp["note"] else ""),
            ]
        )
    print(table(SERIES_HEADERS, rows), file=out)
    for cp in series["change_points"]:
        for line in cp["differences"]:
            print(f"  firing {cp['firing_index']} {cp['metric']}: {line}", file=out)
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    main_parser = argparse.ArgumentParser(
        prog="recovery-lab",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    main_parser.add_argument("--url", default=os.environ.get("RECOVERY_LAB_URL", ""), help="the server")
    main_parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="a file whose first line is the API token (else RECOVERY_LAB_TOKEN)",
    )
    main_parser.add_argument("--token", action=SecretRefused, help=argparse.SUPPRESS)
    main_parser.add_argument(
        "--retries",
        type=int,
        default=int(os.environ.get("RECOVERY_LAB_RETRIES", DEFAULT_RETRIES)),
        help=f"tries again after a refused connection or a 502/503/504, waiting 2, 4, 8... s "
        f"(default {DEFAULT_RETRIES}: about a minute)",
    )
    commands = main_parser.add_subparsers(dest="command", required=True)

    def waiting(command):
        command.add_argument("--timeout", type=float, default=6 * 3600, help="seconds (0: none); then cancel")
        command.add_argument("--poll", type=float, default=5.0, help="seconds between questions to the API")

    def keyed(command):
        command.add_argument(
            "--key", default="", help="Idempotency-Key: the same key returns the same experiment"
        )

    run = commands.add_parser("run", help="define an experiment from a YAML or JSON file")
    run.add_argument("definition")
    run.add_argument("--wait", action="store_true", help="follow it until it finishes")
    waiting(run)
    keyed(run)
    wait_ = commands.add_parser("wait", help="follow an experiment until it finishes")
    wait_.add_argument("experiment", type=int)
    waiting(wait_)
    compare_ = commands.add_parser("compare", help="B against A, cell by cell")
    compare_.add_argument("a", type=int)
    compare_.add_argument("b", type=int)
    compare_.add_argument(
        "--metric",
        action="append",
        help="recovery_seconds (default), downtime_seconds, ...; the recovery's resources "
        "(recovery_disk_read_bytes, recovery_cpu_seconds) too, each tested alone",
    )
    compare_.add_argument("--ignore", action="append", default=[], help="a setting left out of the match")
    compare_.add_argument("--json", action="store_true", help="the API's answer as it is")
    export = commands.add_parser("export", help="an experiment's runs (CSV) or the whole experiment")
    export.add_argument("experiment", type=int)
    export.add_argument("--format", choices=("csv", "archive"), default="csv")
    export.add_argument("-o", "--output", help="file to write (CSV: standard output by default)")
    gate = commands.add_parser("gate", help="fail on a significant recovery slowdown against a baseline")
    gate.add_argument("definition")
    gate.add_argument("--baseline", type=int, required=True, help="the experiment to compare with")
    gate.add_argument("--max-slowdown", default="10%", help="slowdown tolerated, e.g. 10%% (default)")
    gate.add_argument("--metric", action="append", help="recovery_seconds (default); repeat to add")
    gate.add_argument(
        "--decide-on-disturbed-host",
        action="store_true",
        help="give a verdict on runs measured while other work used the host (default: exit 2, undecided)",
    )
    gate.add_argument(
        "--wait",
        action="store_true",
        help="a baseline still queued or running: wait for it to finish (default: exit 2, nothing queued)",
    )
    waiting(gate)
    keyed(gate)
    series_ = commands.add_parser("series", help="a recurring series' change points")
    series_.add_argument("series", type=int)
    series_.add_argument("--json", action="store_true", help="the API's answer as it is")
    predict = commands.add_parser("predict", help="a live server's downtime if it crashed, from the lab")
    exporter = commands.add_parser("exporter", help="predict as Prometheus metrics, read at each scrape")
    for command in (predict, exporter):
        command.add_argument(
            "--server-file",
            metavar="FILE",
            help="a file whose first line is the server's address (else RECOVERY_LAB_SERVER): "
            "mysql://, mariadb:// or postgresql://, TLS as ?sslmode= or ?ssl-mode= (docs/production.md)",
        )
        command.add_argument("--server", action=SecretRefused, help=argparse.SUPPRESS)
        command.add_argument(
            "--include-imported",
            action="store_true",
            help="let imported runs answer too (by default only runs the lab's runners measured)",
        )
        command.add_argument("--lab-host", required=True, help="the lab host whose runs answer")
        command.add_argument("--engine", choices=RUNNER_ENGINES, help="innodb unless postgresql://")
        command.add_argument("--rto", type=parse_seconds, help="recovery time objective, e.g. 30s or 2m")
        command.add_argument("--read-timeout", type=float, default=5.0, help="seconds a read may take (5)")
        command.add_argument("--rocksdb-wal-dir", default="", help="MyRocks: its WAL folder, on this host")
    predict.add_argument(
        "--startup-probe", type=parse_seconds, help="a Kubernetes startupProbe budget, e.g. 60s"
    )
    predict.add_argument("--json", action="store_true", help="the server's facts and the lab's answer")
    predict.add_argument(
        "--measure",
        action="store_true",
        help="also queue lab runs at this server's settings (build, buffer pool, redo log, durability), "
        "crashed at three redo volumes up to what its log holds",
    )
    predict.add_argument("--repetitions", type=int, default=3, help="--measure: runs per redo volume (3)")
    predict.add_argument(
        "--wait", action="store_true", help="--measure: follow the runs, then predict again from them"
    )
    waiting(predict)
    keyed(predict)
    predict.add_argument(
        "--decide-on",
        choices=("now", "worst"),
        default="now",
        help="the exit code says what a crash now would do (now) or one at the worst case (worst)",
    )
    exporter.add_argument("--listen", default="127.0.0.1:9433", help="HOST:PORT of /metrics (127.0.0.1:9433)")
    exporter.add_argument(
        "--web-config",
        metavar="FILE",
        help="TLS and basic auth for /metrics, in Prometheus' web configuration format",
    )
    exporter.add_argument(
        "--fit-refresh",
        type=float,
        default=600.0,
        help="seconds between asking the dashboard for the fit (600)",
    )
    return main_parser


def parse_seconds(text: str) -> float:
    """'30', '30s', '2m', '1.5h': seconds."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*", text or "")
    if not match:
        raise argparse.ArgumentTypeError(f"a duration like 30s, 2m or 1.5h, not {text!r}")
    value = float(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]
    if value <= 0:
        raise argparse.ArgumentTypeError("a duration above zero")
    return value


def command_live(api: Api, args, out) -> int:
    address = first_line(args.server_file, "--server-file") or os.environ.get("RECOVERY_LAB_SERVER", "")
    if not address:
        raise ClientError(
            "no live server: set RECOVERY_LAB_SERVER=mysql://USER:PASSWORD@HOST:PORT, or give "
            "--server-file FILE holding it"
        )
    url = parse_server_url(address)
    args.engine = args.engine or DEFAULT_ENGINE_OF[url.scheme]
    if args.command == "predict" and args.measure:
        return command_measure(api, args, out, url)
    if args.command == "predict":
        return production.command_predict(api, args, out, url)
    return production.command_exporter(api, args, out, url)


def lab_host(api: Api, name: str) -> dict:
    """The registered host of that name, with its probed facts (the API lists them by pages)."""
    page = 1
    while True:
        listed = api.get("/api/hosts/", page=page)
        for host in listed.get("results", []):
            if host["name"] == name:
                return host
        if not listed.get("next"):
            raise ClientError(f"no lab host is named {name!r}")
        page += 1


def command_measure(api: Api, args, out, url) -> int:
    """predict --measure: predict from what the lab has (if it has enough), queue the runs that
    would stand for this server, and with --wait follow them and predict again (the server read
    anew): that prediction's exit code."""
    if args.json:
        raise ClientError("--measure prints what it queues: give it without --json")
    if not 1 <= args.repetitions <= 20:
        raise ClientError("--repetitions: from 1 to 20")
    state = read_server(url, args.engine, args.read_timeout, args.rocksdb_wal_dir)
    try:
        code = production.command_predict(api, args, out, url, state)
    except ClientError as exc:
        print(f"lab         no prediction yet: {exc}", file=out)
        code = production.EXIT_NO_ANSWER
    host = lab_host(api, args.lab_host)
    try:
        build, what = lab_request.build_for(host, state.version)
    except lab_request.RequestRefused as exc:
        raise ClientError(str(exc)) from None
    definition = lab_request.measuring_definition(state, args.lab_host, build, args.repetitions)
    chosen = {**definition["parameters"], **definition["server_options"]}
    settings = ", ".join(f"{k} {v[0]}" for k, v in chosen.items() if k not in ("insert_rate", "server_build"))
    targets = definition["crash"]["redo_bytes"]
    print(
        f"measure     on {args.lab_host}, build {build} ({what}): {settings}; crashed at "
        f"{', '.join(targets[:-1])} and {targets[-1]} of redo, {args.repetitions} runs each",
        file=out,
    )
    experiment = submit(api, definition, args.key, out)
    if not args.wait:
        return code
    wait(api, experiment["id"], args.timeout, args.poll, out)
    return production.command_predict(api, args, out, url)


COMMANDS = {
    "run": command_run,
    "wait": command_wait,
    "compare": command_compare,
    "export": command_export,
    "gate": command_gate,
    "series": command_series,
    "predict": command_live,
    "exporter": command_live,
}


class SecretRefused(argparse.Action):
    """--token and --server are refused: on a command line, every user of the machine reads them in ps."""

    def __call__(self, parser, namespace, values, option_string=None):
        where = {
            "--token": "RECOVERY_LAB_TOKEN or --token-file",
            "--server": "RECOVERY_LAB_SERVER or --server-file",
        }
        parser.error(
            f"{option_string} is not taken: every user of this machine can read a command's arguments "
            f"(ps). Give it in {where[option_string]}"
        )


def first_line(path: str | None, option: str) -> str:
    """The first line of a secret's file, stripped ("" without a file)."""
    if not path:
        return ""
    try:
        if os.stat(path).st_mode & 0o077:  # as ssh says of a private key others can read
            print(
                f"recovery-lab: warning: {option} {path} is readable by other users (chmod 600 it)",
                file=sys.stderr,
            )
        with open(path, encoding="utf-8") as handle:
            return handle.readline(8192).strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientError(
            f"{option} {path} cannot be read: {getattr(exc, 'strerror', None) or exc}"
        ) from None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        token = first_line(args.token_file, "--token-file") or os.environ.get("RECOVERY_LAB_TOKEN", "")
        return COMMANDS[args.command](Api(args.url, token, retries=args.retries), args, sys.stdout)
    except (ClientError, LiveError) as exc:
        print(f"recovery-lab: {exc}", file=sys.stderr)
        return production.EXIT_NO_ANSWER if args.command == "predict" else EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
