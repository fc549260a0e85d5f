"""The benchmarks' own set-up still fits the schema: the generated team history `make bench`
loads (scripts/bench_analysis.py, also the load benchmark's), inserted here in small, and read
back through the API."""

import sys

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from experiments.models import Experiment, Run

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from bench_analysis import ANALYSED, fill_sql  # noqa: E402

pytestmark = pytest.mark.django_db


def test_the_generated_history_fits_the_schema_and_is_charted(client):
    with connection.cursor() as cursor:
        cursor.execute(fill_sql(experiments=3, runs_per_experiment=12))
        cursor.execute(f"SELECT count(*) FROM experiments_run WHERE {ANALYSED}")
        analysable = cursor.fetchone()[0]
    assert Experiment.objects.count() == 3 and Run.objects.count() == 36
    client.force_login(get_user_model().objects.get(username="bench"))
    body = client.get("/api/explore/?x=redo_bytes&y=recovery_seconds&group=engine").json()
    assert body["count"] == analysable > 0
