# Recovery Lab. `make demo` to see it work, `make test` to check it. Both run `make setup` first.
.PHONY: setup demo demo-versions test lint bench start stop

PY := .venv/bin/python
RUN_DIR := .run
WEB_ADDR ?= 127.0.0.1:8000
# the processes make start runs know where they are served (SITE_URL follows it unless set)
export WEB_ADDR

setup:
	@bash scripts/setup.sh
	@mkdir -p $(RUN_DIR) && touch $(RUN_DIR)/setup.done

# make start runs setup again only when what it installs from changed (or .env, the database's
# server or Redis is missing): a restart with nothing changed starts at once.
SETUP_INPUTS := pyproject.toml uv.lock .env.example scripts/setup.sh scripts/write_env.sh $(wildcard */migrations/*.py)
$(RUN_DIR)/setup.done: $(SETUP_INPUTS)
	@$(MAKE) -s setup

# The logs (the alerts' mails among them) and nginx's configuration are the operator's alone:
# made so before anything writes them (`>` keeps a file's mode), and what an older start left is
# closed too. The processes keep their own umask: the runner's files for a server's user need it.
# webapp.proxy lets nginx's workers through $(RUN_DIR) (never listed) to gunicorn's socket's folder.
RUN_PATH = $(abspath $(RUN_DIR))
RUN_FILES = web.log nginx.log nginx-error.log worker.log alerts.log beat.log nginx.conf
WEB_SOCKET = $(RUN_PATH)/web/web.sock
start: $(RUN_DIR)/setup.done
	@{ [ -f .env ] && pg_isready -q -h 127.0.0.1 -p 5432 && redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; } \
	  || $(MAKE) -s setup
	@umask 077; mkdir -p $(RUN_DIR) && cd $(RUN_DIR) && touch $(RUN_FILES) \
	  && find . -maxdepth 1 -type f -exec chmod go-rwx {} +
	@$(MAKE) -s stop
	@$(PY) manage.py collectstatic --noinput -v 0
	@# nginx takes the clients and reads each request whole; gunicorn's workers only see it then
	@$(PY) -m webapp.proxy --listen $(WEB_ADDR) --upstream unix:$(WEB_SOCKET) --run-dir $(RUN_DIR) > $(RUN_DIR)/nginx.conf
	@BEHIND_PROXY=true nohup .venv/bin/gunicorn -c webapp/gunicorn.conf.py -b unix:$(WEB_SOCKET) -w 2 --access-logfile - > $(RUN_DIR)/web.log 2>&1 & echo $$! > $(RUN_DIR)/web.pid
	@nohup nginx -e stderr -c $(RUN_PATH)/nginx.conf > $(RUN_DIR)/nginx.log 2>&1 & echo $$! > $(RUN_DIR)/proxy.pid
	@nohup .venv/bin/celery -A webapp worker -l info -c 2 > $(RUN_DIR)/worker.log 2>&1 & echo $$! > $(RUN_DIR)/worker.pid
	@nohup .venv/bin/celery -A webapp worker -l info -c 2 -n alerts@%h -Q "$$($(PY) manage.py shell --no-imports -v 0 -c 'from django.conf import settings; print(settings.CELERY_ALERTS_QUEUE)')" > $(RUN_DIR)/alerts.log 2>&1 & echo $$! > $(RUN_DIR)/alerts.pid
	@nohup .venv/bin/celery -A webapp beat -l info -s $(RUN_DIR)/beat-schedule > $(RUN_DIR)/beat.log 2>&1 & echo $$! > $(RUN_DIR)/beat.pid
	@$(PY) manage.py firstadmin
	@echo "web on http://$(WEB_ADDR)/ (logs in $(RUN_DIR)/, yours alone); stop with 'make stop'"

stop:
	@for name in proxy web worker alerts beat; do \
	  if [ -f $(RUN_DIR)/$$name.pid ]; then kill $$(cat $(RUN_DIR)/$$name.pid) 2>/dev/null || true; rm -f $(RUN_DIR)/$$name.pid; fi; \
	done

demo: start
	@$(PY) manage.py demo --url http://$(WEB_ADDR)

# Three real servers side by side on InnoDB: the host's MariaDB 10.11, 11.8 from Debian 13 and
# Oracle's MySQL 9.7 from Debian unstable.
demo-versions: start
	@$(PY) manage.py demo --versions --url http://$(WEB_ADDR)

# Two processes; a test that measures rates or times runs with no other server beside it
# (tests/conftest.py, _servers_share_the_machine).
test: setup
	@$(PY) -m pytest -n 2 --dist worksteal

bench: setup
	@$(PY) scripts/bench.py
	@$(PY) scripts/bench_analysis.py
	@$(PY) scripts/bench_browser.py
	@$(PY) scripts/bench_dataset.py
	@$(PY) scripts/bench_profile.py
	@$(PY) scripts/bench_dispatch.py
	@$(PY) scripts/bench_load.py
	@$(PY) scripts/bench_power_loss.py
	@$(PY) scripts/bench_series.py
	@$(PY) scripts/bench_stats.py
	@$(PY) scripts/bench_hosts.py
	@$(PY) scripts/bench_calibration.py

lint: setup
	@.venv/bin/ruff check .
	@.venv/bin/lint-imports --no-cache
