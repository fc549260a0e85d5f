"""recovery-lab predict and recovery-lab exporter: the lab's answer for a live server.

predict reads the live server once (recovery_lab_cli/live.py), asks the dashboard for the lab's fit
at the redo it would replay now and at the most its redo capacity allows (GET /api/predict/),
and prints both downtimes with their 95% prediction intervals, and what the worst case means for
systemd's start timeout and a Kubernetes startupProbe. The exporter serves the same as Prometheus
metrics, the live server read at every scrape (bounded by --read-timeout) and the fit fetched
from the dashboard in the background (every --fit-refresh seconds), so a scrape never waits on
the dashboard. No Django: this runs beside the production server, whose credentials stay here.
"""

import json
import logging
import threading
import time
from datetime import UTC, datetime

from prometheus_client.core import CollectorRegistry, GaugeMetricFamily

from recovery_lab_cli.exporter_web import WebConfig, WebConfigError, load_web_config, serve_metrics
from recovery_lab_cli.live import LiveReader, ServerState, read_server
from recovery_lab_cli.prediction import (
    OUTCOMES,
    Fit,
    Prediction,
    orchestrator_verdicts,
    rto_outcome,
    stall_risk,
)
from recovery_lab_cli.server_url import LiveError, ServerUrl

EXIT_WITHIN, EXIT_OVER_RTO, EXIT_NO_ANSWER, EXIT_AT_RISK, EXIT_STALL_RISK = 0, 2, 3, 4, 5
log = logging.getLogger("recovery-lab.exporter")


def ask_lab(api, lab_host: str, state: ServerState, volumes: list[int], include_imported=False) -> dict:
    asked = {"include_imported": "true"} if include_imported else {}
    settings = {"buffer_pool_bytes": state.buffer_pool_bytes, "redo_log_bytes": state.redo_log_bytes}
    asked.update({name: value for name, value in settings.items() if value})
    return api.get(
        "/api/predict/",
        host=lab_host,
        engine=state.engine,
        server_version=state.version,
        redo_bytes=volumes,
        **asked,
    )


def _mib(size: float | None) -> str:
    return "unknown" if size is None else f"{size / 2**20:,.1f} MiB"


def _downtime(prediction: Prediction) -> str:
    if prediction.refused:
        return f"no prediction: {prediction.refused}"
    text = (
        f"downtime {prediction.typical_seconds:.3g} s (95% prediction interval "
        f"{prediction.low_seconds:.3g}-{prediction.high_seconds:.3g} s)"
    )
    return text + (", beyond the redo the lab measured" if prediction.extrapolated else "")


def _age(iso: str) -> str:
    if not iso:
        return "age unknown"
    seconds = (datetime.now(UTC) - datetime.fromisoformat(iso)).total_seconds()
    for unit, size in (("days", 86400), ("hours", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def predict_text(
    state: ServerState, answer: dict, rto: float | None, probe: float | None, case_decided: str = "now"
) -> tuple[str, int]:
    """The report predict prints and its exit code, decided on a crash now (`case_decided` "now")
    or at the worst case ("worst"): a stall the lab saw on this pool first, then the RTO."""
    now, worst = (Prediction(**p) for p in answer["predictions"])
    measured = (
        f"{answer['imported_runs']} of them imported"
        if answer.get("imported_runs")
        else "measured by the lab's runners"
    )
    by = f" by {', '.join(answer['made_by'])}" if answer.get("made_by") else ""
    lines = [
        f"server      {state.server}: {state.version}, {state.engine}, "
        f"buffer pool {_mib(state.buffer_pool_bytes)}",
        f"lab         {answer['host']}: {answer['based_on_runs']} runs of {', '.join(answer['versions'])} "
        f"(experiments {', '.join(map(str, answer['experiment_ids']))}{by}; {measured}), redo "
        f"{_mib(answer['fit']['measured_redo'][0])} to {_mib(answer['fit']['measured_redo'][1])}, "
        f"R² {answer['r2']:.2f}, newest run {_age(answer['newest_run_finished_at'])}",
        f"now         {_mib(state.redo_to_replay)} of redo to replay -> {_downtime(now)}",
        f"worst case  {_mib(state.worst_redo)} ({state.bound}) -> {_downtime(worst)}",
    ]
    # a dashboard older than this client answers a fit without what the interval stands on
    complete = set(Fit.__dataclass_fields__) <= set(answer["fit"])
    fit, disturbed = Fit.from_dict(answer["fit"]) if complete else None, answer.get("disturbed_runs", 0)
    lines += [
        f"interval    {CASE_WORDS[case]}: {why}"
        for case, prediction in (("now", now), ("worst", worst))
        if fit and (why := fit.why_wide(prediction, disturbed))
    ]
    lines += [f"note        {warning}" for warning in answer["warnings"]]
    pools = answer.get("buffer_pool_bytes") or []
    older = "differing" not in answer  # a dashboard older than this client says nothing of settings
    if older and state.buffer_pool_bytes and pools and state.buffer_pool_bytes not in pools:
        lines.append(
            f"note        the lab's runs had a buffer pool of {', '.join(_mib(p) for p in pools)}, "
            f"this server {_mib(state.buffer_pool_bytes)}: recovery reads and writes pages through it"
        )
    lines += [f"restart     {line}" for line in orchestrator_verdicts(worst, probe)]
    stalls = {
        case: stall_risk(
            answer.get("stalls") or [], answer.get("recovered") or {}, state.buffer_pool_bytes, redo
        )
        for case, redo in (("now", state.redo_to_replay), ("worst", state.worst_redo))
    }
    lines += [f"STALL RISK  {CASE_WORDS[case]}: {said}" for case, said in stalls.items() if said]
    outcomes = {"now": None, "worst": None}
    if rto is not None:
        outcomes = {"now": rto_outcome(now, rto), "worst": rto_outcome(worst, rto)}
        said = {case: _outcome_text(outcomes[case], p) for case, p in (("now", now), ("worst", worst))}
        if outcomes["worst"] is None and outcomes["now"] == "exceeded":  # the worst case is no less
            outcomes["worst"] = "exceeded"
            why = worst.refused or "nothing predicted"
            said["worst"] = (
                f"EXCEEDED (no shorter than a crash now; its own downtime cannot be predicted: {why})"
            )
        lines += [f"RTO         {rto:g} s, {CASE_WORDS[case]}: {text}" for case, text in said.items()]
    decided = now if case_decided == "now" else worst
    if stalls[case_decided]:
        code = EXIT_STALL_RISK
    elif rto is not None:
        code = OUTCOME_EXITS.get(outcomes[case_decided], EXIT_NO_ANSWER)
    else:
        code = EXIT_NO_ANSWER if decided.refused else EXIT_WITHIN
    return "\n".join(lines), code


CASE_WORDS = {"now": "a crash now", "worst": "the worst case"}
OUTCOME_EXITS = {"within": EXIT_WITHIN, "at_risk": EXIT_AT_RISK, "exceeded": EXIT_OVER_RTO}


def _outcome_text(outcome: str | None, prediction: Prediction) -> str:
    """A prediction against the RTO in words, with the interval that decides it."""
    if outcome is None:
        return f"cannot be held to it ({prediction.refused or 'nothing predicted'})"
    low, typical, high = prediction.low_seconds, prediction.typical_seconds, prediction.high_seconds
    if outcome == "within":
        return f"within it (the 95% interval ends at {high:.3g} s)"
    if outcome == "exceeded":
        return f"EXCEEDED (even the 95% interval's low end, {low:.3g} s, is over it)"
    return f"AT RISK (it lies inside the 95% interval, {low:.3g}-{high:.3g} s; typical {typical:.3g} s)"


def command_predict(api, args, out, url: ServerUrl, state: ServerState | None = None) -> int:
    """The server read (unless `state` is its reading), the lab asked, the answer printed: the
    exit code (predict_text)."""
    state = state or read_server(url, args.engine, args.read_timeout, args.rocksdb_wal_dir)
    worst = state.worst_redo if state.worst_redo is not None else state.redo_to_replay
    asked = ask_lab(api, args.lab_host, state, [state.redo_to_replay, worst], args.include_imported)
    answer = {**asked, "host": args.lab_host}
    if state.worst_redo is None:
        answer["predictions"][1] = Prediction(worst, refused=f"no bound on the redo: {state.bound}").as_dict()
    text, code = predict_text(state, answer, args.rto, args.startup_probe, args.decide_on)
    if args.json:
        body = {"server": state.__dict__, "lab": answer, "exit": code}
        out.write(json.dumps(body, indent=2, default=str) + "\n")
    else:
        out.write(text + "\n")
    return code


class LiveCollector:
    """Prometheus collector: reads the live server at a scrape, on one connection kept between
    scrapes; a scrape while a read is in flight answers the last values with their age, so a
    stalled server costs one bounded read, not a thread and a login per scrape. The fit comes
    from a thread that asks the dashboard every `refresh_s` (for the version read last)."""

    def __init__(self, api, url: ServerUrl, args):
        self.api, self.url, self.args = api, url, args
        self.labels = {"server": url.name, "engine": args.engine, "lab_host": args.lab_host}
        self.reader = LiveReader(url, args.engine, args.read_timeout, args.rocksdb_wal_dir)
        self.reading = threading.Lock()
        self.state: ServerState | None = None  # the last successful read
        self.read_at = 0.0  # when (monotonic)
        self.read_seconds = 0.0
        self.up = False
        self.fit: dict | None = None  # the dashboard's answer, with the version it is for
        self.fit_error = ""
        self.version = ""
        self.stop = threading.Event()

    def latest(self) -> ServerState | None:
        """The server read now, or, while another scrape's read is in flight, the last values;
        None when the last read failed."""
        if self.reading.acquire(blocking=False):
            try:
                started = time.monotonic()
                try:
                    self.state, self.up = self.reader.read(), True
                    self.read_at = time.monotonic()
                except LiveError as exc:
                    log.warning("%s", exc)
                    self.up = False
                self.read_seconds = time.monotonic() - started
            finally:
                self.reading.release()
        return self.state if self.up else None

    def refresh_forever(self) -> None:
        while not self.stop.wait(self.args.fit_refresh):
            self.refresh()

    def refresh(self) -> None:
        try:
            state = self.state or self.latest()
            if state is None:
                raise LiveError(f"{self.url.name} has not been read yet")
            answer = ask_lab(self.api, self.args.lab_host, state, [], self.args.include_imported)
        except Exception as exc:  # a failed refresh keeps the last fit: its age says how old it is
            self.fit_error = str(exc)
            log.warning("the fit was not refreshed: %s", exc)
            return
        self.fit, self.version, self.fit_error = answer, state.version, ""

    def _gauge(self, name: str, text: str, value: float, **extra) -> GaugeMetricFamily:
        labels = {**self.labels, **extra}
        family = GaugeMetricFamily(name, text, labels=list(labels))
        family.add_metric(list(labels.values()), value)
        return family

    def collect(self):
        state = self.latest()
        yield self._gauge(
            "recovery_lab_read_seconds", "How long the last read of the live server took", self.read_seconds
        )
        yield self._gauge(
            "recovery_lab_up", "1 when the last read of the live server succeeded", float(self.up)
        )
        if state is not None:
            yield self._gauge(
                "recovery_lab_read_age_seconds",
                "Age of the values served (a scrape during another's read serves the last ones)",
                time.monotonic() - self.read_at,
            )
        if self.args.rto is not None:
            yield self._gauge(
                "recovery_lab_rto_seconds", "The recovery time objective given (--rto)", self.args.rto
            )
        if state is None:
            return
        yield self._gauge(
            "recovery_lab_redo_to_replay_bytes", "Redo a crash now would replay", state.redo_to_replay
        )
        if state.worst_redo is not None:
            yield self._gauge(
                "recovery_lab_redo_capacity_bytes", "The most redo the server lets build up", state.worst_redo
            )
        answer = self.fit
        if answer is None or self.version != state.version:
            return  # no fit yet, or the server changed version since: nothing predicted
        fit = Fit.from_dict(answer["fit"])
        yield self._gauge("recovery_lab_fit_runs", "Lab runs the fit stands on", answer["based_on_runs"])
        if answer["newest_run_finished_at"]:
            finished = datetime.fromisoformat(answer["newest_run_finished_at"])
            age = (datetime.now(UTC) - finished).total_seconds()
            yield self._gauge("recovery_lab_fit_age_seconds", "Age of the newest lab run in the fit", age)
        for name, text, redo in (
            (
                "recovery_lab_predicted_downtime_seconds",
                "Predicted downtime if the server crashed now",
                state.redo_to_replay,
            ),
            (
                "recovery_lab_predicted_worst_downtime_seconds",
                "Predicted downtime at the largest redo allowed",
                state.worst_redo,
            ),
        ):
            if redo is None:
                continue
            prediction = fit.at(redo)
            if prediction.refused:
                continue
            family = GaugeMetricFamily(name, text, labels=[*self.labels, "bound"])
            for bound, value in (
                ("typical", prediction.typical_seconds),
                ("low", prediction.low_seconds),
                ("high", prediction.high_seconds),
            ):
                family.add_metric([*self.labels.values(), bound], value)
            yield family
        yield from self._verdicts(state, fit, answer)

    def _verdicts(self, state: ServerState, fit: Fit, answer: dict):
        """Per case (a crash now, the worst case): the prediction against the RTO as a number
        (OUTCOMES: 0 within, 1 at risk, 2 exceeded), and 1 where the lab saw this pool stall
        short of the redo (prediction.stall_risk)."""
        outcome = GaugeMetricFamily(
            "recovery_lab_rto_outcome",
            "The prediction against the RTO: 0 within (the 95% interval under it), 1 at risk (the RTO "
            "inside the interval), 2 exceeded (the interval over it)",
            labels=[*self.labels, "case"],
        )
        risk = GaugeMetricFamily(
            "recovery_lab_stall_risk",
            "1 where the lab saw a recovery stall on this buffer pool (or a larger one) and this redo "
            "is beyond what it recovered on it",
            labels=[*self.labels, "case"],
        )
        for case, redo in (("now", state.redo_to_replay), ("worst", state.worst_redo)):
            if redo is None:
                continue
            said = stall_risk(
                answer.get("stalls") or [], answer.get("recovered") or {}, state.buffer_pool_bytes, redo
            )
            risk.add_metric([*self.labels.values(), case], float(bool(said)))
            verdict = rto_outcome(fit.at(redo), self.args.rto) if self.args.rto is not None else None
            if verdict is not None:
                outcome.add_metric([*self.labels.values(), case], OUTCOMES[verdict])
        yield risk
        if outcome.samples:
            yield outcome


def command_exporter(api, args, out, url: ServerUrl) -> int:
    host, _, port = args.listen.rpartition(":")
    if not port.isdigit():
        raise LiveError(f"--listen takes HOST:PORT, not {args.listen}")
    try:
        web = load_web_config(args.web_config) if args.web_config else WebConfig()
    except WebConfigError as exc:
        raise LiveError(str(exc)) from None
    collector = LiveCollector(api, url, args)
    registry = CollectorRegistry()
    registry.register(collector)
    # serving first: a dashboard away at start (the client retries for about a minute) delays the
    # predictions, not the server's own metrics (recovery_lab_up, the redo to replay)
    try:
        server = serve_metrics(registry, host or "127.0.0.1", int(port), web)
    except WebConfigError as exc:
        raise LiveError(str(exc)) from None
    scheme = "https" if web.cert_file else "http"
    guarded = ", basic auth" if web.users else ""
    out.write(f"recovery-lab exporter: metrics of {url.name} on {scheme}://{args.listen}/metrics{guarded}\n")
    out.flush()
    try:
        collector.refresh()  # its error is logged, not fatal: the next refresh tries again
        collector.refresh_forever()
    finally:
        server.shutdown()
        collector.reader.close()
    return EXIT_WITHIN
