"""csv_text(value): a text cell of a CSV PostgreSQL writes (experiments/api/csv.py), quoted the way
defusedcsv quotes one: a cell a spreadsheet would run as a formula (it starts with @ + - = | or %
and is not a number) gets a leading apostrophe and its pipes escaped; an empty one is NULL, which
COPY writes as an empty cell, as Python's csv writes ''. A plain SQL function: PostgreSQL inlines
it into the query."""

from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION csv_text(value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN left(value, 1) IN ('@', '+', '-', '=', '|', '%') AND value !~ '^-?[0-9,.]+$'
            THEN '''' || replace(value, '|', '\|')
        ELSE NULLIF(value, '')
    END
$$
"""


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0026_cell_medians"),
    ]

    operations = [migrations.RunSQL(CREATE, "DROP FUNCTION IF EXISTS csv_text(text)")]
