#!/usr/bin/env bash
# make setup: system packages, services, virtual environment, database, migrations.
# Safe to run again: every step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v sysbench >/dev/null || need_apt+=(sysbench)
{ command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ]; } || need_apt+=(mariadb-server)
[ -e /usr/lib/mysql/plugin/ha_rocksdb.so ] || need_apt+=(mariadb-plugin-rocksdb)
command -v psql >/dev/null || need_apt+=(postgresql)
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v pdftoppm >/dev/null || need_apt+=(poppler-utils)  # the tests read the PDF reports
command -v fusermount3 >/dev/null || need_apt+=(fuse3)  # the power_loss crash: its FUSE layer
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)  # the tests start their own sshd on loopback
[ -x /usr/sbin/ip ] || need_apt+=(iproute2)  # the several-hosts test's network namespaces
[ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)  # make start's buffering proxy, and its test
command -v fio >/dev/null || need_apt+=(fio)  # the probe's measure of the disk (its floor)
command -v perf >/dev/null || need_apt+=(linux-perf)  # CPU profiles of a restart (parameters.profile)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "== starting PostgreSQL"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start \
    || $SUDO service postgresql start
  for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.2; done
fi
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  echo "== starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 50); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.2; done
fi

command -v uv >/dev/null || python3 -m pip install -q uv
UV_PROJECT_ENVIRONMENT=.venv uv sync --frozen -q --compile-bytecode
# This machine (and many Docker images) sets PYTHONDONTWRITEBYTECODE: without bytecode made here,
# every command would compile ~900 files at each start (manage.py parselog took 3.8 s to start).
.venv/bin/python -m compileall -q -j 0 experiments recovery_lab_cli workers runner webapp manage.py >/dev/null

bash scripts/write_env.sh

db_url=$(.venv/bin/python -c 'import environ; e = environ.Env(); environ.Env.read_env(".env"); print(e.str("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/recovery_lab"))')
db_name=${db_url##*/}
admin_url=${db_url%/*}/postgres
if ! psql "$admin_url" -tAc "SELECT 1 FROM pg_database WHERE datname='${db_name}'" | grep -q 1; then
  echo "== creating database ${db_name}"
  psql "$admin_url" -qc "CREATE DATABASE \"${db_name}\""
fi
.venv/bin/python manage.py migrate --noinput -v 0

# A second real server version beside the host's own: MariaDB 11.8 from Debian 13's packages,
# unpacked beside the system's server (never installed over it), as the local host's build
# mariadb-11.8. Offline, setup goes on without it (the tests of two versions then say why).
.venv/bin/python manage.py registerhost local --local >/dev/null
if ! .venv/bin/python manage.py installbuild local mariadb-11.8 --debian trixie --if-missing; then
  echo "== MariaDB 11.8 was not installed: the local host has its own server only"
fi
# PostgreSQL 17 the same way, beside the system's PostgreSQL 15, as the build postgresql-17.
if ! .venv/bin/python manage.py installbuild local postgresql-17 --debian trixie --if-missing; then
  echo "== PostgreSQL 17 was not installed: the local host has its own PostgreSQL only"
fi
# Oracle MySQL 9.7 from Debian unstable's packages (its own glibc and libstdc++ through their
# loader), as the build mysql-9.7.
if ! .venv/bin/python manage.py installbuild local mysql-9.7 --debian sid --if-missing; then
  echo "== MySQL 9.7 was not installed: the local host runs MariaDB's and PostgreSQL's servers only"
fi
# Prometheus for the exporter's test (a real server scrapes it and evaluates the alert rule of
# docs/prometheus/): Debian's build unpacked into .cache/, since installing the package would start
# a system service. Offline, the test says what is missing.
if [ ! -x .cache/prometheus/usr/bin/prometheus ]; then
  echo "== unpacking Debian's prometheus into .cache/prometheus"
  download=$(mktemp -d)
  if (cd "$download" && apt-get download -q prometheus >/dev/null 2>&1); then
    mkdir -p .cache/prometheus && dpkg-deb -x "$download"/prometheus_*.deb .cache/prometheus
  else
    echo "== prometheus could not be downloaded: the exporter's Prometheus test will say so"
  fi
  rm -rf "$download"
fi
echo "== setup done"
