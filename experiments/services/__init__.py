"""Every state change of hosts, experiments and runs goes through these functions.

Views, the API, management commands and Celery tasks call them and nothing else writes rows.
One module per area; each is the only writer of its rows.
"""

from ..definition import DefinitionError
from .dispatch import (
    DRIVE_HOST_TASK,
    claim_next_run,
    driver_started,
    has_claimable_run,
    hosts_to_wake,
    release_lost_runs,
    retry_run,
    wake_hosts,
)
from .experiments import IDEMPOTENCY_KEY, AnnotationRejected, annotate, create_experiment
from .hosts import (
    SSH_HOST,
    SSH_USER,
    WORK_DIR,
    active_host_names,
    forget_host_key,
    record_host_down,
    record_host_reachable,
    record_probe,
    register_host,
)
from .runs import (
    TRUNCATION_MARKER,
    Bundle,
    apply_metrics,
    cancel_experiment,
    end_attempt,
    exclude_run,
    include_run,
    ingest_bundle,
    is_cancelled,
    mark_run_failed,
    record_progress,
    refresh_experiment_status,
    reparse_run,
    run_spec,
    store_files,
)

__all__ = [
    "AnnotationRejected",
    "DRIVE_HOST_TASK",
    "IDEMPOTENCY_KEY",
    "SSH_HOST",
    "SSH_USER",
    "TRUNCATION_MARKER",
    "WORK_DIR",
    "Bundle",
    "DefinitionError",
    "active_host_names",
    "annotate",
    "apply_metrics",
    "cancel_experiment",
    "claim_next_run",
    "create_experiment",
    "driver_started",
    "end_attempt",
    "exclude_run",
    "forget_host_key",
    "has_claimable_run",
    "hosts_to_wake",
    "include_run",
    "ingest_bundle",
    "is_cancelled",
    "mark_run_failed",
    "record_host_reachable",
    "record_probe",
    "record_host_down",
    "record_progress",
    "refresh_experiment_status",
    "register_host",
    "release_lost_runs",
    "reparse_run",
    "retry_run",
    "run_spec",
    "store_files",
    "wake_hosts",
]
