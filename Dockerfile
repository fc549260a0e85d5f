# One image for web, worker and beat. The worker runs benchmark runs on its own container
# (the "local" host), so the image carries MariaDB, MyRocks and sysbench; Chromium prints the
# reports' PDFs.
FROM python:3.11-slim-bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      mariadb-server mariadb-client mariadb-plugin-rocksdb sysbench postgresql-client chromium fuse3 nginx-light \
 && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir uv
WORKDIR /app
COPY pyproject.toml uv.lock ./
# Dependencies first (a layer that survives code changes), then the project itself, which also
# installs the recovery-lab-parse command; bytecode compiled here, not at every start.
RUN UV_PROJECT_ENVIRONMENT=/venv uv sync --frozen --no-dev --no-install-project --compile-bytecode
ENV PATH=/venv/bin:$PATH PYTHONUNBUFFERED=1
COPY . .
RUN UV_PROJECT_ENVIRONMENT=/venv uv sync --frozen --no-dev --compile-bytecode \
 && python -m compileall -q experiments recovery_lab_cli workers runner webapp
# A throwaway key for this one command (settings refuse to start without a real one).
RUN SECRET_KEY=$(python -c 'import secrets; print(secrets.token_urlsafe(48))') \
    python manage.py collectstatic --noinput -v 0
# Web, worker, beat and the PDF's Chromium run as an unprivileged user (Chromium keeps its
# sandbox). The worker's runs go to /var/lib/recovery-lab/work and its builds' cache beside it,
# its own and writable by nobody else (the runner refuses them otherwise); compose mounts a volume.
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin recovery \
 && mkdir -p /var/lib/recovery-lab/work /var/lib/recovery-lab/builds \
 && chown recovery: /var/lib/recovery-lab /var/lib/recovery-lab/work /var/lib/recovery-lab/builds \
 && chmod 755 /var/lib/recovery-lab /var/lib/recovery-lab/work /var/lib/recovery-lab/builds
USER recovery
EXPOSE 8000
# Run alone, the image serves gunicorn directly; compose puts nginx in front (the proxy service).
CMD ["gunicorn", "-c", "webapp/gunicorn.conf.py", "-b", "0.0.0.0:8000", "-w", "3"]
