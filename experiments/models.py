from django.conf import settings
from django.db import models
from django.urls import reverse


class Engine(models.TextChoices):
    INNODB = "innodb", "InnoDB"
    ROCKSDB = "rocksdb", "MyRocks"
    TOKUDB = "tokudb", "TokuDB"


class Transport(models.TextChoices):
    LOCAL = "local", "local (this machine)"
    SSH = "ssh", "SSH"


class Host(models.Model):
    """A benchmark host the workers may send runs to."""

    name = models.CharField(max_length=63, unique=True)
    transport = models.CharField(max_length=8, choices=Transport.choices)
    ssh_user = models.CharField(max_length=64, blank=True)
    ssh_host = models.CharField(max_length=255, blank=True)
    ssh_port = models.PositiveIntegerField(default=22)
    ssh_key_path = models.CharField(max_length=1024, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def address(self) -> str:
        if self.transport == Transport.LOCAL:
            return "local"
        return f"{self.ssh_user}@{self.ssh_host}:{self.ssh_port}"


class ExperimentStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    PARTIAL = "partial", "done, some runs failed"
    FAILED = "failed", "failed"


class Experiment(models.Model):
    name = models.CharField(max_length=200)
    definition = models.JSONField(help_text="The normalized definition it was created from.")
    status = models.CharField(
        max_length=10, choices=ExperimentStatus.choices, default=ExperimentStatus.QUEUED
    )
    imported = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("experiment-detail", args=[self.pk])


class RunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"

    @classmethod
    def finished(cls):
        return [cls.DONE, cls.FAILED]


class RunMetrics(models.Model):
    """The metrics of DESIGN.md (experiments/metrics.py) as real columns: they filter, sort
    and chart in SQL."""

    checkpoint_lsn = models.BigIntegerField(null=True, blank=True)
    crash_lsn = models.BigIntegerField(null=True, blank=True)
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
    ready_seconds = models.FloatField(null=True, blank=True)
    downtime_seconds = models.FloatField(null=True, blank=True)
    clean_start_seconds = models.FloatField(null=True, blank=True)
    redo_apply_mb_per_s = models.FloatField(null=True, blank=True)
    workload_tps = models.FloatField(null=True, blank=True)
    workload_qps = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    verified = models.BooleanField(null=True, blank=True)

    class Meta:
        abstract = True


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
    imported = models.BooleanField(default=False)
    server_version = models.CharField(max_length=120, blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["experiment_id", "matrix_index"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "matrix_index"], name="run_unique_cell"),
        ]
        indexes = [models.Index(fields=["status", "host"]), models.Index(fields=["engine"])]

    def __str__(self):
        return f"run {self.pk} ({self.engine} on {self.host_label})"

    def get_absolute_url(self):
        return reverse("run-detail", args=[self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in RunStatus.finished()


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
