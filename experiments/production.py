"""recovery-lab predict and recovery-lab exporter: the lab's answer for a live server.

predict reads the live server once (experiments/live.py), asks the dashboard for the lab's fit
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

from prometheus_client import start_http_server
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily

from experiments.live import LiveError, ServerState, ServerUrl, read_server
from experiments.prediction import Fit, Prediction, orchestrator_verdicts

EXIT_WITHIN, EXIT_OVER_RTO, EXIT_NO_ANSWER = 0, 2, 3
log = logging.getLogger("recovery-lab.exporter")


def ask_lab(api, lab_host: str, state: ServerState, volumes: list[int]) -> dict:
    return api.get(
        "/api/predict/",
        host=lab_host,
        engine=state.engine,
        server_version=state.version,
        redo_bytes=volumes,
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


def predict_text(state: ServerState, answer: dict, rto: float | None, probe: float | None) -> tuple[str, int]:
    """The report predict prints and its exit code."""
    now, worst = (Prediction(**p) for p in answer["predictions"])
    lines = [
        f"server      {state.server}: {state.version}, {state.engine}, "
        f"buffer pool {_mib(state.buffer_pool_bytes)}",
        f"lab         {answer['host']}: {answer['based_on_runs']} runs of {', '.join(answer['versions'])} "
        f"(experiments {', '.join(map(str, answer['experiment_ids']))}), redo "
        f"{_mib(answer['fit']['measured_redo'][0])} to {_mib(answer['fit']['measured_redo'][1])}, "
        f"R² {answer['r2']:.2f}, newest run {_age(answer['newest_run_finished_at'])}",
        f"now         {_mib(state.redo_to_replay)} of redo to replay -> {_downtime(now)}",
        f"worst case  {_mib(state.worst_redo)} ({state.bound}) -> {_downtime(worst)}",
    ]
    lines += [f"note        {warning}" for warning in answer["warnings"]]
    pools = answer.get("buffer_pool_bytes") or []
    if state.buffer_pool_bytes and pools and state.buffer_pool_bytes not in pools:
        lines.append(
            f"note        the lab's runs had a buffer pool of {', '.join(_mib(p) for p in pools)}, "
            f"this server {_mib(state.buffer_pool_bytes)}: recovery reads and writes pages through it"
        )
    lines += [f"restart     {line}" for line in orchestrator_verdicts(worst, probe)]
    code = EXIT_WITHIN
    if rto is not None:
        if worst.high_seconds is None:
            lines.append(
                f"RTO         {rto:g} s: the worst case cannot be predicted, so it cannot be held to it"
            )
            code = EXIT_NO_ANSWER
        elif worst.high_seconds > rto:
            lines.append(
                f"RTO         {rto:g} s: EXCEEDED at the worst case (up to {worst.high_seconds:.3g} s)"
            )
            code = EXIT_OVER_RTO
        else:
            lines.append(
                f"RTO         {rto:g} s: the worst case is within it (up to {worst.high_seconds:.3g} s)"
            )
    if now.refused and code == EXIT_WITHIN:
        code = EXIT_NO_ANSWER
    return "\n".join(lines), code


def command_predict(api, args, out, url: ServerUrl) -> int:
    state = read_server(url, args.engine, args.read_timeout, args.rocksdb_wal_dir)
    worst = state.worst_redo if state.worst_redo is not None else state.redo_to_replay
    answer = {**ask_lab(api, args.lab_host, state, [state.redo_to_replay, worst]), "host": args.lab_host}
    if state.worst_redo is None:
        answer["predictions"][1] = Prediction(worst, refused=f"no bound on the redo: {state.bound}").as_dict()
    text, code = predict_text(state, answer, args.rto, args.startup_probe)
    if args.json:
        body = {"server": state.__dict__, "lab": answer, "exit": code}
        out.write(json.dumps(body, indent=2, default=str) + "\n")
    else:
        out.write(text + "\n")
    return code


class LiveCollector:
    """Prometheus collector: reads the live server at each scrape; the fit comes from a thread
    that asks the dashboard every `refresh_s` (for the version the server reported last)."""

    def __init__(self, api, url: ServerUrl, args):
        self.api, self.url, self.args = api, url, args
        self.labels = {"server": url.name, "engine": args.engine, "lab_host": args.lab_host}
        self.fit: dict | None = None  # the dashboard's answer, with the version it is for
        self.fit_error = ""
        self.version = ""
        self.stop = threading.Event()

    def refresh_forever(self) -> None:
        while not self.stop.wait(self.args.fit_refresh):
            self.refresh()

    def refresh(self) -> None:
        try:
            state = read_server(self.url, self.args.engine, self.args.read_timeout, self.args.rocksdb_wal_dir)
            answer = ask_lab(self.api, self.args.lab_host, state, [])
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
        started = time.monotonic()
        try:
            state = read_server(self.url, self.args.engine, self.args.read_timeout, self.args.rocksdb_wal_dir)
        except LiveError as exc:
            log.warning("%s", exc)
            state = None
        yield self._gauge(
            "recovery_lab_read_seconds", "How long the live server's read took", time.monotonic() - started
        )
        yield self._gauge(
            "recovery_lab_up", "1 when the live server was read at this scrape", float(state is not None)
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


def command_exporter(api, args, out, url: ServerUrl) -> int:
    host, _, port = args.listen.rpartition(":")
    if not port.isdigit():
        raise LiveError(f"--listen takes HOST:PORT, not {args.listen}")
    collector = LiveCollector(api, url, args)
    registry = CollectorRegistry()
    registry.register(collector)
    # serving first: a dashboard away at start (the client retries for about a minute) delays the
    # predictions, not the server's own metrics (recovery_lab_up, the redo to replay)
    server, _ = start_http_server(int(port), addr=host or "127.0.0.1", registry=registry)
    out.write(f"recovery-lab exporter: metrics of {url.name} on http://{args.listen}/metrics\n")
    out.flush()
    try:
        collector.refresh()  # its error is logged, not fatal: the next refresh tries again
        collector.refresh_forever()
    finally:
        server.shutdown()
    return EXIT_WITHIN
