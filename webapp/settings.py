"""Settings, read from the environment (or a `.env` file beside manage.py).

Every value has a development default that works on a machine set up by `make setup`; a value
that is present but malformed stops start-up with ImproperlyConfigured instead of being guessed."""

import os
import socket
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from webapp.installation import queue_name

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)
# Keys that were ever written in this repository or its examples: anyone can sign sessions,
# password-reset links and CSRF tokens with them.
DEVELOPMENT_SECRET_KEY = "recovery-lab-insecure-development-key"
KNOWN_SECRET_KEYS = {"change-me", "change-me-in-production", DEVELOPMENT_SECRET_KEY}
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY = env.str("SECRET_KEY", default="")
SECRET_KEY_HELP = (
    "`make setup` writes a fresh one into .env; or set SECRET_KEY in the environment to the output "
    "of: python3 -c 'import secrets; print(secrets.token_urlsafe(48))'"
)
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(f"SECRET_KEY is not set: {SECRET_KEY_HELP}")
    SECRET_KEY = DEVELOPMENT_SECRET_KEY  # DEBUG only, never served with DEBUG off
elif SECRET_KEY in KNOWN_SECRET_KEYS or SECRET_KEY.startswith("django-insecure"):
    raise ImproperlyConfigured(f"SECRET_KEY is a published example value, not a secret: {SECRET_KEY_HELP}")
elif len(SECRET_KEY) < SECRET_KEY_MIN_LENGTH:
    raise ImproperlyConfigured(
        f"SECRET_KEY is {len(SECRET_KEY)} characters long, fewer than {SECRET_KEY_MIN_LENGTH}: "
        f"{SECRET_KEY_HELP}"
    )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Served over TLS (directly or behind a proxy that terminates it): secure cookies, redirects to
# https and HSTS. Off by default: `make demo` serves plain http on loopback.
HTTPS = env.bool("HTTPS", default=False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Behind a proxy that terminates TLS, Django learns the scheme from the proxy's header (only set
# this when the proxy always sets or strips it).
BEHIND_TLS_PROXY = env.bool("BEHIND_TLS_PROXY", default=False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# The audit trail (django-auditlog, read in /admin/auditlog/): who registered or changed a host,
# excluded or annotated a run, changed or deleted an experiment, changed a user's roles, made,
# changed or paused a series, triaged a change point, and when.
# Services name the user themselves where the API's token (not the page's session) says who.
# Addresses are not recorded: the one a request carries can be forged.
AUDITLOG_DISABLE_REMOTE_ADDR = True
AUDITLOG_INCLUDE_TRACKING_MODELS = (
    {
        "model": "auth.user",
        "include_fields": ["username", "is_staff", "is_superuser", "is_active"],
        "m2m_fields": ["groups"],
    },
    {
        "model": "experiments.host",
        "exclude_fields": ["status", "facts", "last_seen", "last_error", "wake_sent_at"],
    },
    {"model": "experiments.experiment", "include_fields": ["name", "notes", "tags", "created_by", "origin"]},
    {"model": "experiments.run", "include_fields": ["excluded", "excluded_reason", "notes", "tags"]},
    {
        "model": "experiments.series",
        "include_fields": [
            "name",
            "definition",
            "schedule",
            "enabled",
            "alert_threshold",
            "alert_emails",
            "alert_webhooks",
            "created_by",
        ],
    },
    {"model": "experiments.changepoint", "include_fields": ["triage", "note", "triaged_by"]},
)

# Password guessing (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one user name
# from one address, that pair is locked out for LOGIN_LOCKOUT_MINUTES (429 and a page that says
# so); a success resets the count. A header a client sets itself changes nothing.
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The client's address, read by django-ipware: the peer's, or behind the product's nginx (whose
# peer is a unix socket, or the proxy under compose) the one address nginx writes in
# X-Forwarded-For, replacing the client's: ipware's proxy count (addresses after it) is 0.
BEHIND_PROXY = env.bool("BEHIND_PROXY", default=BEHIND_TLS_PROXY)
AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR"] if BEHIND_PROXY else ["REMOTE_ADDR"]
AXES_IPWARE_PROXY_COUNT = 0 if BEHIND_PROXY else None
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
SESSION_COOKIE_HTTPONLY = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_filters",
    "axes",
    "auditlog",
    "rest_framework",
    "knox",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "experiments",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "webapp.limits.UploadLimit",  # before anything reads the body
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "auditlog.middleware.AuditlogMiddleware",  # the page's user on every audit entry
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",  # last: it answers a locked-out login
]

# Content-Security-Policy (django-csp) on every page, and on the PDF's page: scripts only from
# this site's own files (no inline script, no eval), nothing framed, forms posted here only.
# Styles may be inline: Plotly sets the position of every mark with a style attribute.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "experiments.roles.context",
            ],
        },
    },
]

DATABASES = {"default": env.db_url("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/recovery_lab")}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point to PostgreSQL (postgres://...)")
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
# The team's recovery time objective in seconds: what an experiment's report plans a redo log
# for (RTO_SECONDS; unset: the longest downtime the experiment measured, said as such).
RTO_SECONDS = env.float("RTO_SECONDS", default=0.0) or None
USE_I18N = False
USE_TZ = True

# In memory: hosts' spreads, and experiments' analyses (204 KiB for 200 runs; pages/context.py).
_MEMORY = "django.core.cache.backends.locmem.LocMemCache"
CACHES = {
    "default": {"BACKEND": _MEMORY, "LOCATION": "default"},
    "analysis": {
        "BACKEND": _MEMORY,
        "LOCATION": "analysis",
        "OPTIONS": {"MAX_ENTRIES": env.int("ANALYSIS_CACHE_ENTRIES", default=32)},
    },
}

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")  # what collectstatic writes
# plotly.js is served from static/ (no CDN): the smallest build a page needs, the "strict" one for
# WebGL, which needs no eval under the site's content policy (templates/plotly.html).
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# From collectstatic's output (make start and the image run it), gzip and brotli beside each file;
# static/ as it is only with DEBUG: its files would win and go out uncompressed (1.1 MB, not 0.36).
WHITENOISE_USE_FINDERS = DEBUG

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "experiment-list"
LOGOUT_REDIRECT_URL = "login"

FORM_PARSERS = ["rest_framework.parsers.FormParser", "rest_framework.parsers.MultiPartParser"]
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "experiments.api.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # reads for everyone logged in, writes by role (experiments/roles.py)
    "DEFAULT_PERMISSION_CLASSES": ["experiments.roles.ExperimenterWrites"],
    "DEFAULT_PARSER_CLASSES": ["experiments.api.common.PlainJSONParser", *FORM_PARSERS],  # deep JSON: 400
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
}
# API tokens (django-rest-knox): stored as SHA-512 digests, never in clear; each expires after
# API_TOKEN_DAYS (an admin changes one token's expiry in /admin/); `Authorization: Token KEY`.
KNOX_TOKEN_MODEL = "experiments.ApiToken"
# knox's own migrations make a table for its AuthToken, swapped out here for ApiToken: none is made
MIGRATION_MODULES = {"knox": None}
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=env.int("API_TOKEN_DAYS", default=90)),
    "AUTH_HEADER_PREFIX": "Token",
    "TOKEN_LIMIT_PER_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Recovery Lab API",
    "DESCRIPTION": "Define crash-recovery experiments, follow their runs, import runs done elsewhere.",
    "VERSION": "1",
    # the schema and its docs page for logged-in users, like the rest of the API
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI from drf-spectacular-sidecar's files: users run this on closed networks.
    # requests described as they are sent (a file upload is binary, not a URL)
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # query parameters as strict in the schema as their form fields (experiments/api/schema.py)
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "experiments.api.schema.tighten_query_parameters",
    ],
    # One name per set of choices in the schema (several models have an engine or a status).
    "ENUM_NAME_OVERRIDES": {
        "EngineEnum": "experiments.models.Engine",
        "RunnableEngineEnum": "experiments.vocabulary.RUNNABLE_ENGINES",
        "ExperimentStatusEnum": "experiments.models.ExperimentStatus",
        "RunStatusEnum": "experiments.models.RunStatus",
        "HostStatusEnum": "experiments.models.HostStatus",
        "AttemptOutcomeEnum": "experiments.models.AttemptOutcome",
    },
}

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
# One queue per installation sharing a Redis (and per test session or benchmark): by default
# named after the installation's database, so two dashboards on one Redis stay apart.
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="") or queue_name(
    DATABASES["default"]
)
# Alerts go on a queue of their own, taken by a worker of their own (`make start`, compose): a
# slow mail server or webhook never holds a slot a host's driver needs.
CELERY_ALERTS_QUEUE = env.str("CELERY_ALERTS_QUEUE", default="") or f"{CELERY_TASK_DEFAULT_QUEUE}-alerts"
CELERY_TASK_ROUTES = ("webapp.celery.route_task",)
# The truth about a Run is its row in PostgreSQL; Celery's result backend is not used.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 4 * 3600}
CELERY_BEAT_SCHEDULE = {
    "wake-hosts": {"task": "workers.tasks.wake_hosts_task", "schedule": 30.0},
    "probe-hosts": {"task": "workers.tasks.probe_hosts_task", "schedule": 600.0},
    # Recurring series whose next firing has passed (a firing missed while beat was down runs
    # once when it is back); and alerts not sent yet.
    "fire-series": {"task": "workers.tasks.fire_series_task", "schedule": 60.0},
    "send-alerts": {"task": "workers.tasks.send_pending_notifications_task", "schedule": 300.0},
}

# Alerts of recurring series: links point at SITE_URL (make start sets it from WEB_ADDR; the
# series page says when it is not the address the page was opened at); mail goes through EMAIL_URL
# (smtp://user:password@host:587 with ?tls=True, or consolemail:// to print it).
SITE_URL = (
    env.str("SITE_URL", default="") or f"http://{env.str('WEB_ADDR', default='127.0.0.1:8000')}"
).rstrip("/")
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="recovery-lab@localhost")
# A mail server that does not answer within this many seconds fails the attempt.
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)
# A webhook's whole request (connect, headers, body) within this many seconds, and at most this
# much of its answer read.
WEBHOOK_TIMEOUT_S = env.float("WEBHOOK_TIMEOUT_S", default=10.0)
WEBHOOK_MAX_RESPONSE_BYTES = 4096
# Webhooks go to public addresses only. Internal hosts an admin allows (a chat server inside the
# network): host names or networks, comma-separated, e.g. chat.internal,10.20.0.0/16.
ALERT_INTERNAL_HOSTS = env.list("ALERT_INTERNAL_HOSTS", default=[])
# A series fires at most this often (its schedule is refused otherwise).
SERIES_MIN_INTERVAL_S = env.int("SERIES_MIN_INTERVAL_S", default=3600)

# Encrypts the dashboard's SSH private key at rest (Fernet). Needed only to reach SSH hosts;
# `make setup` writes one into .env.
SSH_KEY_SECRET = env.str("SSH_KEY_SECRET", default="")
if SSH_KEY_SECRET:
    from cryptography.fernet import Fernet

    try:
        Fernet(SSH_KEY_SECRET)
    except ValueError:
        raise ImproperlyConfigured(
            "SSH_KEY_SECRET must be 32 url-safe base64-encoded bytes (a Fernet key); `make setup` makes one"
        ) from None
# Seconds to wait for an SSH host to answer before calling it down.
SSH_CONNECT_TIMEOUT_S = env.int("SSH_CONNECT_TIMEOUT_S", default=15)

# Where the local transport lets the host runner work (datadirs, bundles).
RUNNER_WORK_DIR = Path(env.str("RUNNER_WORK_DIR", default="/var/lib/recovery-lab/work"))
# Server builds made from another Debian release's packages (`manage.py installbuild`): made once
# here, copied to each host's builds folder. The mirror they come from.
BUILDS_CACHE_DIR = Path(env.str("BUILDS_CACHE_DIR", default="/var/lib/recovery-lab/builds"))
DEBIAN_MIRROR = env.str("DEBIAN_MIRROR", default="http://deb.debian.org/debian")
# Seconds a starting server may show no progress (runner/stall.py) before its Run fails: a recovery
# still moving is never cut off; a crash restart still for RUNNER_STALL_AFTER_S ends "stalled".
RUNNER_START_TIMEOUT_S = env.int("RUNNER_START_TIMEOUT_S", default=600)
RUNNER_STALL_AFTER_S = env.int("RUNNER_STALL_AFTER_S", default=90)
# Runs start from a host's cached copy of their loaded dataset (docs/method.md).
RUNNER_REUSE_DATASETS = env.bool("RUNNER_REUSE_DATASETS", default=True)
# A run failing for a passing reason (connection dropped, host busy elsewhere, worker lost) is tried
# again after RUN_RETRY_BACKOFF_S, doubled each try, RUN_MAX_ATTEMPTS in all; a permanent one never.
RUN_MAX_ATTEMPTS = env.int("RUN_MAX_ATTEMPTS", default=3)
RUN_RETRY_BACKOFF_S = env.float("RUN_RETRY_BACKOFF_S", default=30.0)
# A running run whose driver gave no sign of life for this long is lost (its worker died); its
# driver beats four times as often. A driver that only lost its database connection (and the
# host's lock with it) keeps beating once reconnected, so its run is neither retried nor joined.
RUN_LOST_AFTER_S = env.int("RUN_LOST_AFTER_S", default=60)
# How long a driver keeps trying to reach PostgreSQL again (a restart) before it gives up.
DB_RECONNECT_S = env.int("DB_RECONNECT_S", default=120)
# Beat wakes a host with queued runs and no driver; it sends again only after this long, so a
# wake waiting behind busy workers is not repeated on every pass.
WAKE_RESEND_S = env.int("WAKE_RESEND_S", default=300)
# This installation's name in the experiments it exports (where an imported one came from).
INSTALLATION_NAME = env.str("INSTALLATION_NAME", default=socket.gethostname())
# Reports are printed to PDF by this Chromium (Debian's package), offline, within this time.
CHROMIUM_PATH = env.str("CHROMIUM_PATH", default="/usr/bin/chromium")
# The whole print, from waiting for a free printer to the last page: one deadline.
REPORT_PDF_TIMEOUT_S = env.int("REPORT_PDF_TIMEOUT_S", default=60)
# Chromium's own sandbox around the page. Chromium refuses it to root (a web process should not
# run as root: the image's and a packaged install's do not), so it is on unless running as root.
REPORT_PDF_SANDBOX = env.bool("REPORT_PDF_SANDBOX", default=os.geteuid() != 0)
# The largest request body taken (imports of big error logs, exported experiments); files in it
# are streamed to temporary files, not kept in memory.
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=4 * 1024**3)
# The slowest upload a web worker waits for: with UPLOAD_MAX_BYTES it bounds how long a request
# may take, and gunicorn's --timeout (webapp/gunicorn.conf.py) is set from that.
UPLOAD_MIN_BYTES_PER_S = env.int("UPLOAD_MIN_BYTES_PER_S", default=10 * 1024**2)
# Raw files above this size are kept as head + tail, so one runaway log cannot fill the database.
RAW_FILE_MAX_BYTES = env.int("RAW_FILE_MAX_BYTES", default=32 * 1024 * 1024)
# What a .tar.gz made elsewhere may unpack to, counted while it is decompressed (a gzip bomb is
# refused at the bound): an experiment's export, and a run's bundle sent back by a host over SSH.
ARCHIVE_MAX_UNPACKED_BYTES = env.int("ARCHIVE_MAX_UNPACKED_BYTES", default=4 * 1024**3)
BUNDLE_MAX_UNPACKED_BYTES = env.int("BUNDLE_MAX_UNPACKED_BYTES", default=1024**3)
# The longest a synchronous request may take with these settings (an upload of the largest body
# at the slowest rate, with its import; a PDF report), plus a margin: gunicorn's worker timeout.
LONGEST_REQUEST_S = 30 + max(2 * UPLOAD_MAX_BYTES // UPLOAD_MIN_BYTES_PER_S, REPORT_PDF_TIMEOUT_S)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # axes says hello at every start and logs every login; its lockouts are warnings, still shown
    "loggers": {"axes": {"level": "WARNING"}},
}
