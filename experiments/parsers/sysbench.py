"""The sysbench 1.0 report: totals, latency, and the per-interval lines."""

import re
from collections.abc import Iterable

from experiments.parsers.model import ParsedFile, SysbenchReport

_TRANSACTIONS = re.compile(r"^\s*transactions:\s+([0-9]+)\s+\(([0-9.]+) per sec\.\)")
_QUERIES = re.compile(r"^\s*queries:\s+([0-9]+)\s+\(([0-9.]+) per sec\.\)")
_TOTAL_TIME = re.compile(r"^\s*total time:\s+([0-9.]+)s")
_LATENCY = re.compile(r"^\s*(min|avg|max|95th percentile|99th percentile|sum):\s+([0-9.]+)")
# sysbench 0.4/0.5: "approx.  95 percentile:   22.29ms" under "per-request statistics:"
_LEGACY_LATENCY = re.compile(r"^\s*(min|avg|max|approx\.\s+95 percentile):\s+([0-9.]+)ms")
_INTERVAL = re.compile(
    r"^\[ ([0-9]+)s \] thds: ([0-9]+) tps: ([0-9.]+) qps: ([0-9.]+) .*?"
    r"lat \(ms,([0-9]+)%\): ([0-9.]+)"
)


def parse_sysbench(parsed: ParsedFile, lines: Iterable[str]) -> ParsedFile:
    parsed.kind = "sysbench_report"
    report = SysbenchReport()
    in_latency = False
    for text in lines:
        if match := _INTERVAL.match(text):
            report.intervals.append(
                {
                    "second": int(match.group(1)),
                    "threads": int(match.group(2)),
                    "tps": float(match.group(3)),
                    "qps": float(match.group(4)),
                    "latency_percentile": int(match.group(5)),
                    "latency_ms": float(match.group(6)),
                }
            )
        elif match := _TRANSACTIONS.match(text):
            report.transactions, report.tps = int(match.group(1)), float(match.group(2))
        elif match := _QUERIES.match(text):
            report.qps = float(match.group(2))
        elif match := _TOTAL_TIME.match(text):
            report.total_time_s = float(match.group(1))
        elif text.startswith("Latency (ms):"):
            in_latency = True
        elif match := _LEGACY_LATENCY.match(text):
            key = "p95" if match.group(1).startswith("approx") else match.group(1)
            report.latency_ms[key] = float(match.group(2))
        elif text.startswith("OLTP test statistics:"):
            parsed.warn("a sysbench 0.4/0.5 report: totals and latency are read, its other fields are not")
        elif in_latency and (match := _LATENCY.match(text)):
            key = {"95th percentile": "p95", "99th percentile": "p99"}.get(match.group(1), match.group(1))
            report.latency_ms[key] = float(match.group(2))
        elif in_latency and not text.strip():
            in_latency = False
        elif text.startswith("FATAL:") and len(parsed.warnings) < 3:
            parsed.warn(f"sysbench stopped with an error: {text[7:].strip()[:200]}")
    if report.tps is None and report.intervals:
        # The workload was killed (crash during load): no summary, so average the intervals.
        parsed.warn("no final summary (the workload was interrupted); figures are interval averages")
        report.tps = round(sum(i["tps"] for i in report.intervals) / len(report.intervals), 2)
        report.qps = round(sum(i["qps"] for i in report.intervals) / len(report.intervals), 2)
        report.total_time_s = float(report.intervals[-1]["second"])
        latencies = sorted(i["latency_ms"] for i in report.intervals)
        report.latency_ms["p95_of_intervals"] = latencies[int(0.95 * (len(latencies) - 1))]
    if report.tps is None:
        parsed.warn("no sysbench totals or interval lines were found (truncated report?)")
    parsed.sysbench = report
    return parsed
