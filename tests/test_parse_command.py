"""The parsers as a command a DBA runs on the database host: no Django, the same output as
manage.py parselog, the shipped schema."""

import json
import subprocess
import sys

import jsonschema

from .conftest import DATA, ROOT
from .samples import sample

COMMAND = ROOT / ".venv" / "bin" / "recovery-lab-parse"
LOG = DATA / "mariadb-10.11" / "innodb_binlog_during_load" / "error_with_clean_restart.log"
SCHEMA = ROOT / "experiments" / "parsers" / "schemas" / "parsed_file.schema.json"


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_console_script_prints_what_parselog_prints_from_any_directory(tmp_path):
    for flags in ([], ["--json"]):
        standalone = run(COMMAND, *flags, LOG, cwd=tmp_path)
        django = run(sys.executable, ROOT / "manage.py", "parselog", *flags, LOG, cwd=ROOT)
        assert standalone.returncode == django.returncode == 0, standalone.stderr + django.stderr
        assert standalone.stdout.strip() == django.stdout.strip()
    documents = json.loads(standalone.stdout)
    for document in documents:  # the schema is one file's document
        jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    crash = [e for e in documents[0]["episodes"] if e["crash_recovery"]]
    assert len(crash) == 1 and crash[0]["redo_bytes"] == 102229397 - 44420


def test_python_m_runs_the_same_command_without_importing_django():
    probe = (
        "import sys, runpy; sys.argv = ['x', '--json', sys.argv[1]]\n"
        "try:\n    runpy.run_module('experiments.parsers', run_name='__main__')\n"
        "except SystemExit as end:\n    assert end.code == 0, end.code\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('django', 'celery', 'psycopg')]\n"
        "assert not heavy, heavy\n"
    )
    done = run(sys.executable, "-c", probe, LOG, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["kind"] == "error_log"


def test_bad_input_gets_a_clear_message_and_an_exit_code(tmp_path):
    bad_zone = run(COMMAND, "--tz", "Mars/Olympus", LOG)
    assert bad_zone.returncode == 2 and "not a time zone name" in bad_zone.stderr
    missing = run(COMMAND, LOG, tmp_path / "nowhere.log")
    assert missing.returncode == 1 and "could not read" in missing.stderr
    assert "CRASH RECOVERY" in missing.stdout  # the readable file is still reported
    assert "cannot read the file" in missing.stdout


def test_a_start_that_died_in_recovery_is_failed_in_both_outputs(tmp_path):
    log = tmp_path / "error.log"
    log.write_bytes(sample("production_logs.txt", "E"))  # MySQL 5.7.39: assertion, signal 6
    text = run(COMMAND, log)
    assert text.returncode == 0, text.stderr
    assert "CRASH RECOVERY (innodb), FAILED before ready (Assertion failure in thread" in text.stdout
    (document,) = json.loads(run(COMMAND, "--json", log).stdout)
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    (episode,) = document["episodes"]
    assert episode["failed"] and episode["ready_at"] is None and episode["recovery_seconds"] is None


def test_a_parser_that_raises_prints_what_it_found_and_exits_3():
    """A parser bug is not a clean result: the output so far, the failure on stderr, exit 3."""
    probe = (
        "import sys, experiments.parsers as p\n"
        "from experiments.parsers import cli\n"
        "def broken(parsed, lines):\n    raise ValueError('unexpected line')\n"
        "p.parse_error_log = broken\n"
        "sys.exit(cli.main(['--json', sys.argv[1]]))\n"
    )
    done = run(sys.executable, "-c", probe, LOG, cwd=ROOT)
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)[0]["parser_error"] == "ValueError: unexpected line"
    assert f"the parser failed on {LOG} (ValueError: unexpected line)" in done.stderr
