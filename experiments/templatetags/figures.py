"""{{ figures|figure_json:"figures" }}: Django's json_script, its three escapes made with
str.replace instead of str.translate over a mapping. The same text; translate looks up every
character in Python, which cost the experiment page 40 ms for its figures and explore 350 ms for
its 99,500 points (docs/benchmarks.md). tests/test_charts.py holds the two equal."""

import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder
from django.utils.html import format_html
from django.utils.safestring import mark_safe

register = template.Library()

# What json_script escapes (django.utils.html._json_script_escapes): nothing in the JSON can end
# the script element or start markup.
ESCAPES = (("&", "\\u0026"), ("<", "\\u003C"), (">", "\\u003E"))


@register.filter
def figure_json(value, element_id: str) -> str:
    return json_text_script(json.dumps(value, cls=DjangoJSONEncoder), element_id)


@register.filter
def json_text_script(text: str, element_id: str) -> str:
    """JSON already written (charts.explore.explore_page_json) in a script element, escaped as
    json_script escapes."""
    for character, escaped in ESCAPES:
        text = text.replace(character, escaped)
    return format_html('<script id="{}" type="application/json">{}</script>', element_id, mark_safe(text))
