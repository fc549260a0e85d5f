import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.urls import reverse
from knox.models import AbstractAuthToken

from experiments import vocabulary
from runner.contract import DEFAULT_WORK_DIR

# Engines come from the one vocabulary (value, label, colour): INNODB, ROCKSDB, TOKUDB.
Engine = models.TextChoices("Engine", [(t.value.upper(), (t.value, t.label)) for t in vocabulary.ENGINES])


class Transport(models.TextChoices):
    LOCAL = "local", "local (this machine)"
    SSH = "ssh", "SSH"


class HostStatus(models.TextChoices):
    UNKNOWN = "unknown", "unknown (not probed yet)"
    # An SSH host whose key an admin has not confirmed yet: nothing is sent to it.
    UNVERIFIED = "unverified", "unverified (an admin confirms its SSH host key)"
    IDLE = "idle", "idle"
    BUSY = "busy", "busy (running a run)"
    DOWN = "down", "down"
    # Its work directory (or a folder above it) could be changed by another user: nothing is
    # written or run there until it is fixed and the host probed again.
    UNSAFE = "unsafe", "unsafe (its work directory is refused)"


class ProbeState(models.TextChoices):
    NONE = "", "none"
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"


class HostQuerySet(models.QuerySet):
    def with_activity(self):
        """Hosts with their run count and how many of their runs are running now."""
        return self.annotate(
            run_count=models.Count("runs"),
            running_count=models.Count("runs", filter=models.Q(runs__status="running")),
        ).order_by("name")  # annotate(Count) groups by the row: say the order again


class Host(models.Model):
    """A benchmark host the workers may send runs to."""

    name = models.CharField(max_length=63, unique=True)
    transport = models.CharField(max_length=8, choices=Transport.choices)
    ssh_user = models.CharField(max_length=64, blank=True)
    ssh_host = models.CharField(max_length=255, blank=True)
    ssh_port = models.PositiveIntegerField(default=22)
    # The host's SSH key, pinned when an admin confirmed its fingerprint; a different key is
    # refused afterwards.
    host_key = models.TextField(blank=True)
    host_key_fingerprint = models.CharField(max_length=100, blank=True)
    # The key the host presented to the last probe while none was pinned: shown to admins to
    # confirm, never trusted by itself.
    offered_host_key = models.TextField(blank=True)
    offered_host_key_fingerprint = models.CharField(max_length=100, blank=True)
    work_dir = models.CharField(max_length=200, default=DEFAULT_WORK_DIR)
    status = models.CharField(max_length=12, choices=HostStatus.choices, default=HostStatus.UNKNOWN)
    facts = models.JSONField(default=dict, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When a driver task was last sent for this host and has not started yet: beat sends another
    # only after a while, so a host whose message waits behind busy workers is not woken again
    # on every pass.
    wake_sent_at = models.DateTimeField(null=True, blank=True)
    # A probe an admin asked for ("Probe now", "Measure the disk", POST .../probe/): work for the
    # worker, one at a time per host; its outcome said in words until the next.
    probe_state = models.CharField(max_length=8, choices=ProbeState.choices, blank=True, default="")
    probe_measure_disk = models.BooleanField(default=False)
    probe_requested_at = models.DateTimeField(null=True, blank=True)
    probe_outcome = models.TextField(blank=True)
    probe_failed = models.BooleanField(default=False)
    probe_outcome_at = models.DateTimeField(null=True, blank=True)

    objects = HostQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def current_status(self) -> str:
        """busy while one of its runs is running (needs with_activity()); else what the last probe
        found."""
        return HostStatus.BUSY if self.running_count else self.status

    @property
    def address(self) -> str:
        if self.transport == Transport.LOCAL:
            return "local"
        return f"{self.ssh_user}@{self.ssh_host}:{self.ssh_port}"


class SSHIdentity(models.Model):
    """The dashboard's own SSH key pair (one row). The private key is kept encrypted with
    SSH_KEY_SECRET from the environment and is never shown; users see the public key, to put
    in their hosts' authorized_keys."""

    public_key = models.TextField()
    private_key_encrypted = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.public_key


class ExperimentStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    PARTIAL = "partial", "done, some runs failed"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


class Experiment(models.Model):
    # Which experiment this is across installations: an export carries it, and an installation
    # that has it already refuses the import.
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    definition = models.JSONField(help_text="The normalized definition it was created from.")
    status = models.CharField(
        max_length=10, choices=ExperimentStatus.choices, default=ExperimentStatus.QUEUED
    )
    imported = models.BooleanField(default=False)
    tags = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    # The question it asks and what the team learnt, in the author's words (the report opens with it).
    notes = models.TextField(blank=True, max_length=5000)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The client's Idempotency-Key: a POST sent again with the same key returns this experiment.
    idempotency_key = models.CharField(max_length=100, blank=True)
    # Where an imported export came from: {"installation", "id", "author", "exported_at"}.
    origin = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A firing of a recurring series: the series, and the scheduled moment it stands for.
    series = models.ForeignKey(
        "Series", null=True, blank=True, on_delete=models.SET_NULL, related_name="firings"
    )
    fired_for = models.DateTimeField(null=True, blank=True)
    # An A/A check of its host: odd repetitions are copy A, even ones copy B (analysis/aa.py).
    aa_check = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [GinIndex(fields=["tags"], name="experiment_tags")]
        constraints = [
            models.UniqueConstraint(
                fields=["created_by", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="experiment_unique_idempotency_key",
            ),
            # One experiment per series and scheduled moment: a firing is never made twice.
            models.UniqueConstraint(fields=["series", "fired_for"], name="experiment_one_firing"),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("experiment-detail", args=[self.pk])


class RunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"
    # its recovery stopped moving (runner/stall.py): a result, never tried again
    STALLED = "stalled", "stalled"

    @classmethod
    def finished(cls):
        return [cls.DONE, cls.FAILED, cls.CANCELLED, cls.STALLED]


class LsnField(models.DecimalField):
    """A log sequence number as the server wrote it: up to 2^64 (a MariaDB checkpoint LSN of 20
    digits, PostgreSQL's FFFFFFFF/1511B00), which a bigint does not hold. numeric(20) in the
    database, a Python int in the code."""

    def __init__(self, *args, **kwargs):
        kwargs.update(max_digits=20, decimal_places=0)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("max_digits", None)
        kwargs.pop("decimal_places", None)
        return name, path, args, kwargs

    @property
    def validators(self):  # not DecimalValidator's: the value is an int, its range the column's
        return [*self.default_validators, *self._validators]

    def from_db_value(self, value, expression, connection):
        return None if value is None else int(value)

    def to_python(self, value):
        return None if value in (None, "") else int(value)


class RunMetrics(models.Model):
    """The metrics of docs/design.md (experiments/metrics.py) as real columns: they filter, sort
    and chart in SQL."""

    checkpoint_lsn = LsnField(null=True, blank=True)
    crash_lsn = LsnField(null=True, blank=True)
    redo_bytes = models.BigIntegerField(null=True, blank=True)
    pages_to_recover = models.BigIntegerField(null=True, blank=True)
    redo_records_applied = models.BigIntegerField(null=True, blank=True)
    trx_rolled_back = models.BigIntegerField(null=True, blank=True)
    rows_undone = models.BigIntegerField(null=True, blank=True)
    pages_written = models.BigIntegerField(null=True, blank=True)
    log_bytes_written = models.BigIntegerField(null=True, blank=True)
    data_bytes_written = models.BigIntegerField(null=True, blank=True)
    recovery_seconds = models.FloatField(null=True, blank=True)
    rollback_seconds = models.FloatField(null=True, blank=True)
    # After the restart: until the workload's throughput is back to 90% of its pre-crash rate.
    warmup_seconds = models.FloatField(null=True, blank=True)
    ready_seconds = models.FloatField(null=True, blank=True)
    downtime_seconds = models.FloatField(null=True, blank=True)
    clean_start_seconds = models.FloatField(null=True, blank=True)
    redo_apply_mb_per_s = models.FloatField(null=True, blank=True)
    workload_tps = models.FloatField(null=True, blank=True)
    workload_qps = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    verified = models.BooleanField(null=True, blank=True)
    checkpoint_age_bytes = models.BigIntegerField(null=True, blank=True)
    # InnoDB: the checkpoint LSN at the crash less the one before the workload (what the run did,
    # whatever its flushing asked: held back, 0 or a checkpoint record's few bytes)
    checkpoint_moved_bytes = models.BigIntegerField(null=True, blank=True)
    achieved_insert_rate = models.FloatField(null=True, blank=True)
    rows_inserted = models.BigIntegerField(null=True, blank=True)
    # Crash method power_loss: the ledger's commits the server acknowledged before the cut, and
    # how many of them recovery did not bring back.
    acknowledged_commits = models.BigIntegerField(null=True, blank=True)
    lost_commits = models.BigIntegerField(null=True, blank=True)
    # What the server's threads used over the recovery (experiments/ingest/resources.py).
    recovery_cpu_seconds = models.FloatField(null=True, blank=True)
    recovery_busiest_cpu_share = models.FloatField(null=True, blank=True)
    # ...and the share of the recovery it was ready to run but waited for a core (other work had it)
    recovery_core_wait_share = models.FloatField(null=True, blank=True)
    # How many batches the recovery applied its redo in (MariaDB "To recover", MySQL "Applying a
    # batch"): more than one where the redo did not fit the buffer pool at once.
    recovery_batches = models.IntegerField(null=True, blank=True)
    recovery_disk_read_bytes = models.BigIntegerField(null=True, blank=True)

    class Meta:
        abstract = True


def without_nul(value):
    """The value with every NUL character removed (in strings, and inside dicts and lists):
    PostgreSQL stores none in text or jsonb, and a crashed server's files can hold them (blocks
    that were never written read back as zeros), so a runner's error or a parsed string may too."""
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if isinstance(value, dict):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(without_nul(item) for item in value)
    return value


# Run columns only the run's own page and API answer read (a second's samples of a long workload
# add up): lists and experiment pages defer them.
PER_RUN_DETAIL_FIELDS = ("samples", "timeline", "live_samples", "resources")


class Run(RunMetrics):
    """One combination x repetition of an experiment. Its row is the truth about it."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    matrix_index = models.PositiveIntegerField()
    host = models.ForeignKey(Host, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    host_label = models.CharField(max_length=100, help_text="The host's name, or the label of an import.")
    engine = models.CharField(max_length=10, choices=Engine.choices)
    parameters = models.JSONField(default=dict)
    server_options = models.JSONField(default=dict)
    repetition = models.PositiveIntegerField(default=1)
    # Numeric copies of the parameters, for charts and filters.
    buffer_pool_bytes = models.BigIntegerField(null=True, blank=True)
    redo_log_bytes = models.BigIntegerField(null=True, blank=True)
    insert_rate = models.PositiveIntegerField(null=True, blank=True)

    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    progress = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    progress_percent = models.FloatField(null=True, blank=True)
    imported = models.BooleanField(default=False)
    # How it was crashed (contract.CRASH_METHODS): sigkill or power_loss. Runs of one method are a
    # series of their own in charts; an imported run's is not known ("").
    crash_method = models.CharField(max_length=20, blank=True, default="", db_index=True)
    # sha256 of an imported error log: the same file is not imported twice.
    source_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    server_version = models.CharField(max_length=120, blank=True)
    # The server family whose build ran it (runner/families/NAME), as the runner said; "" for
    # imported runs and runs stored before runs carried it (their version string names it).
    server_family = models.CharField(max_length=40, blank=True, default="", db_default="")
    # The host as it was when the run ran (CPU, memory, disk, server and tool versions).
    host_facts = models.JSONField(default=dict, blank=True)
    # Server variables as the running server reported them (requested beside effective).
    effective_settings = models.JSONField(default=dict, blank=True)
    # Whether the run started from the host's cached copy of its loaded dataset (None: imported).
    dataset_reused = models.BooleanField(null=True, blank=True)
    # Seconds per recovery phase ({"redo_scan": s, "redo_apply": s, ...}), for the breakdown.
    phases = models.JSONField(default=dict, blank=True)
    # Per phase, how finely its first and last lines were timed ({"redo_apply": 0.005}): a phase
    # shorter than that is "below resolution", which is not zero (experiments/ingest/bundle.py).
    phase_resolution = models.JSONField(default=dict, db_default={}, blank=True)
    # The seconds before the crash: the runner's per-second samples as levels and rates
    # (experiments/ingest/seconds.py); and after it: the restart's timeline beside the clean start.
    # (Defaults in the database too: rows written by SQL of its own, as the benchmarks' are.)
    samples = models.JSONField(default=dict, db_default={}, blank=True)
    timeline = models.JSONField(default=dict, db_default={}, blank=True)
    # What the server's threads used over the recovery and the rest of its start-up, and which
    # resource bound the recovery (experiments/ingest/resources.py).
    resources = models.JSONField(default=dict, db_default={}, blank=True)
    # The verdict's bound resource (resources.verdict.bound): cpu_one_core, cpu_all_cores,
    # host_busy, disk, waiting, mixed, unknown; "" without readings.
    recovery_bound = models.CharField(max_length=20, blank=True, default="", db_default="")
    # While the run goes: the runner's latest samples as it sent them (raw), for the live chart.
    live_samples = models.JSONField(default=list, db_default=[], blank=True)
    # Values the analysis must not trust (impossible durations): left out of charts and
    # statistics unless asked. Set by the analysis, recomputed at every re-parse.
    suspect = models.BooleanField(default=False)
    suspect_reason = models.CharField(max_length=500, blank=True)
    # What else used the host while the run was measured (the runner's windows over the workload
    # and the restart, and its calibration loops); a run measured on a disturbed host says why
    # (experiments/analysis/noise.py). Kept, not excluded: a person decides.
    noise = models.JSONField(default=dict, db_default={}, blank=True)
    disturbed = models.BooleanField(default=False, db_default=False)
    disturbed_reason = models.CharField(max_length=500, blank=True, db_default="")
    # crash.one_crash: the run whose crash this run restarts a copy of (runner/image.py); it waits
    # for that run, and fails with it where the crash was never kept.
    image_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="restarts_from_image"
    )
    # A user's decision to leave a run out of analysis, with the reason; reversible.
    excluded = models.BooleanField(default=False)
    excluded_reason = models.CharField(max_length=500, blank=True)
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    excluded_at = models.DateTimeField(null=True, blank=True)
    # A team's own words on a run ("disk was shared with a backup"), and labels to find it by.
    notes = models.TextField(blank=True, max_length=5000)
    tags = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    # A run that failed for a passing reason waits until then before it is claimed again.
    not_before = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["experiment_id", "matrix_index"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "matrix_index"], name="run_unique_cell"),
        ]
        indexes = [
            models.Index(fields=["status", "host"]),
            models.Index(fields=["engine"]),
            models.Index(fields=["finished_at"]),
        ]

    def __str__(self):
        return f"run {self.pk} ({self.engine} on {self.host_label})"

    def save(self, *args, **kwargs):
        """Text and JSON values as PostgreSQL can store them (see without_nul)."""
        for field in self._meta.concrete_fields:
            if isinstance(field, models.CharField | models.TextField | models.JSONField | ArrayField):
                setattr(self, field.attname, without_nul(getattr(self, field.attname)))
        super().save(*args, **kwargs)

    def get_absolute_url(self):
        return reverse("run-detail", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in RunStatus.finished()

    @property
    def analysable(self) -> bool:
        """Done, and neither suspect nor excluded: what charts and statistics use by default."""
        return self.status == RunStatus.DONE and not self.suspect and not self.excluded


class AttemptOutcome(models.TextChoices):
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    RETRY = "retry", "failed, tried again"
    LOST = "lost", "lost (its worker stopped)"
    CANCELLED = "cancelled", "cancelled"


class RunAttempt(models.Model):
    """One try at a run: where, by which worker, when, and how it ended. "Why did this take
    three tries" has its answer here."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveIntegerField()
    host = models.ForeignKey(Host, null=True, on_delete=models.SET_NULL, related_name="+")
    worker = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=AttemptOutcome.choices, default=AttemptOutcome.RUNNING)
    error = models.TextField(blank=True)
    transient = models.BooleanField(default=False)
    # Its driver's last sign of life (every few seconds while the run goes): a run whose driver
    # lost its database connection, and with it the host's lock, is still alive, not lost.
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="attempt_unique_number")]

    def __str__(self):
        return f"attempt {self.number} of run {self.run_id}"

    @property
    def seconds(self) -> float | None:
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


class RunFile(models.Model):
    """A raw file of a run's bundle (error log, status snapshots, sysbench report, ...).

    Kept in PostgreSQL next to the run rather than on a disk: the web server, the workers and the
    benchmark hosts share no filesystem, one database backup holds every result with its
    evidence, and `reparse` can recompute metrics from the originals when a parser improves.
    Files above RAW_FILE_MAX_BYTES are kept as head and tail (`truncated`).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=100)
    content = models.BinaryField()
    size_bytes = models.BigIntegerField()
    truncated = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="runfile_unique_name")]

    def __str__(self):
        return self.name

    @property
    def text(self) -> str:
        return bytes(self.content).decode("utf-8", errors="replace")


class LogImport(models.Model):
    """One upload of logs made elsewhere (/imports/new/, POST /api/imports/): who, when, from which
    host, which files, and the runs it became (found by the error log's digest, which every run of
    it carries). Written once, by services.imports; imports stored before this table existed were
    filled in from their runs, with no importer (`created_by` None)."""

    created_at = models.DateTimeField(db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    host_label = models.CharField(max_length=100)
    engine = models.CharField(max_length=20)
    server_version = models.CharField(max_length=120, blank=True)
    # None once its experiment is deleted: the import stays on record, its runs went with it
    experiment = models.ForeignKey(
        Experiment, null=True, on_delete=models.SET_NULL, related_name="log_imports"
    )
    source_sha256 = models.CharField(max_length=64, db_index=True)
    # each uploaded file: [{"field": "error_log", "name": "mysqld.err", "bytes": 81234}]
    files = models.JSONField(default=list)
    run_count = models.PositiveIntegerField()
    warnings = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"import of {self.host_label}'s log ({self.run_count} runs)"

    @property
    def runs(self):
        return Run.objects.filter(source_sha256=self.source_sha256, experiment=self.experiment).order_by("id")


class Series(models.Model):
    """A definition on a schedule: each firing creates an experiment from it (its `firings`), and
    the history of those firings is searched for change points. The definition is kept as stored
    experiments keep theirs (validated, normalized); editing it changes the firings to come."""

    name = models.CharField(max_length=200, unique=True)
    definition = models.JSONField(help_text="The normalized definition each firing is created from.")
    # A cron expression (minute hour day-of-month month day-of-week) or @hourly/@daily/@nightly/@weekly.
    schedule = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    # The moment the next firing stands for. Beat fires a series once this has passed, and moves
    # it past now: firings missed while beat was down become one firing, never several.
    next_firing_at = models.DateTimeField()
    # A new change point that makes a metric worse by more than this share (0.10: 10%) alerts.
    alert_threshold = models.FloatField(default=0.10)
    alert_emails = ArrayField(models.EmailField(), default=list, blank=True)
    alert_webhooks = ArrayField(models.URLField(max_length=500), default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    analysed_at = models.DateTimeField(null=True, blank=True)
    # Why the last firing made no experiment (a host or build it names is gone), until one does.
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "series"

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("series-detail", args=[self.pk])


class Triage(models.TextChoices):
    """A person's word on a change point. A note says why for expected and false alarm."""

    NEW = "new", "not looked at"
    ACKNOWLEDGED = "acknowledged", "acknowledged: a regression being worked on"
    EXPECTED = "expected", "expected (a deliberate change)"
    FALSE_ALARM = "false_alarm", "false alarm (noise, a bad night)"
    FIXED = "fixed", "fixed"


# The triages a note must explain.
TRIAGE_NEEDS_NOTE = {
    Triage.EXPECTED: "say why it was expected (the build upgraded, the workload raised, ...)",
    Triage.FALSE_ALARM: "say what made it noise (a busy host, one bad night, ...)",
}


# A change point is confirmed, and alerted, once this many firings stand on each side of it: a
# single bad night is not a regression until the nights after it agree.
CONFIRMING_FIRINGS = 3


class ChangePoint(models.Model):
    """A shift in one metric of a series, found by the change-point search: the first firing
    after it, the metric's median before and after, and the ratio after/before with its 95%
    interval (over the runs on each side, up to the neighbouring change points)."""

    series = models.ForeignKey(Series, on_delete=models.CASCADE, related_name="change_points")
    metric = models.CharField(max_length=40)
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="+")
    firing_index = models.PositiveIntegerField(help_text="1 for the series' first firing.")
    before_median = models.FloatField()
    after_median = models.FloatField()
    ratio = models.FloatField()
    ratio_low = models.FloatField(null=True, blank=True)
    ratio_high = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    worse = models.BooleanField(help_text="The metric moved the bad way (slower, more redo, fewer TPS).")
    # What differed between the last firing before and the first after: build, host facts, settings.
    differences = models.JSONField(default=list, blank=True)
    # Measured firings on each side (up to the neighbouring change points): the sides compared.
    # Confirmed, and alerted, once CONFIRMING_FIRINGS stand before it and agree after it.
    firings_before = models.PositiveIntegerField(default=0, db_default=0)
    firings_after = models.PositiveIntegerField(default=0, db_default=0)
    # Firings from the change on that agree with it (nearer its after median than its before
    # one), up to the first that does not: past a later, smaller shift too. What confirms it.
    firings_agreeing = models.PositiveIntegerField(default=0, db_default=0)
    triage = models.CharField(max_length=12, choices=Triage.choices, default=Triage.NEW)
    note = models.TextField(blank=True, max_length=2000)
    triaged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    triaged_at = models.DateTimeField(null=True, blank=True)
    found_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["series", "firing_index", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["series", "metric", "experiment"], name="changepoint_unique"),
        ]

    def __str__(self):
        return f"{self.series}: {self.metric} x{self.ratio:.2f} at firing {self.firing_index}"

    @property
    def needs_more_firings(self) -> int:
        """Firings still to come before this change is confirmed (0: confirmed, or never: too
        few firings before it)."""
        if self.firings_before < CONFIRMING_FIRINGS:
            return 0
        return max(0, CONFIRMING_FIRINGS - self.firings_agreeing)

    @property
    def confirmed(self) -> bool:
        """Enough firings before it, and enough after it that agree: a step followed by a smaller
        shift one night later (x2.4, then x1.07 in a CI run) is confirmed by the nights after."""
        return min(self.firings_before, self.firings_agreeing) >= CONFIRMING_FIRINGS


class Channel(models.TextChoices):
    EMAIL = "email", "email"
    WEBHOOK = "webhook", "webhook"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "pending"
    SENT = "sent", "sent"
    FAILED = "failed", "failed"


class Notification(models.Model):
    """The outbox: one row per change point and address, so an alert is sent once, and what
    became of it is on record."""

    change_point = models.ForeignKey(ChangePoint, on_delete=models.CASCADE, related_name="notifications")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    target = models.CharField(max_length=500)
    status = models.CharField(max_length=8, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # What every viewer reads ("example.com answered HTTP 500"); the detail (addresses, the
    # exception) is for the owner and admins: stored errors must not make a port scanner.
    error = models.TextField(blank=True)
    error_detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["change_point", "channel", "target"], name="notification_once"),
        ]

    def __str__(self):
        return f"{self.channel} to {self.target}: {self.status}"


class ApiToken(AbstractAuthToken):
    """A user's API token (the command line's and scripts' login), django-rest-knox's: its SHA-512
    digest and first characters are stored, never the key, which is shown once when it is made.
    It expires (`expiry`, set from API_TOKEN_DAYS; an admin may change it), and records when it
    was last used (to the minute)."""

    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"


class CellMedians(models.Model):
    """An experiment's cells' medians on one host (analysis/aa.py, what a host's A/A spread reads
    of its history), kept with the fingerprint of the runs they were taken from: the runs' count
    and the sums of their rows' transaction ids and places (xmin, ctid), which every insert,
    update and delete of a run changes. Taken again where the fingerprint differs."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="+")
    host_label = models.CharField(max_length=100)
    fingerprint = models.CharField(max_length=100)
    # [[engine, settings text, {metric: median}], ...]
    cells = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["experiment", "host_label"], name="cell_medians_once"),
        ]

    def __str__(self):
        return f"cell medians of experiment {self.experiment_id} on {self.host_label}"
