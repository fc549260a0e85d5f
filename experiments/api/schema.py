"""What the OpenAPI schema says of query parameters, made to match what their form fields check
(drf-spectacular's postprocessing hook): Django's text fields refuse NUL, which PostgreSQL
cannot store or compare, so every free-text query parameter says so; a list of ids is whole
numbers, as its form field checks."""

from experiments.filters import ID, NO_NUL

# Query parameters that are comma-separated row ids (django-filter's CSV of NumberFilter, which
# the generator calls numbers).
ID_LISTS = {"experiments"}


def _tightened(name: str, schema: dict) -> dict:
    if schema.get("type") == "array":
        items = schema.get("items", {})
        if name in ID_LISTS and items.get("type") == "number":
            return {**schema, "items": dict(ID)}
        return {**schema, "items": _tightened(name, items)}
    if schema.get("type") == "string" and not ({"pattern", "enum", "format"} & set(schema)):
        return {**schema, "pattern": NO_NUL}
    return schema


# Request bodies whose validation refuses fields it does not know (the series service names them).
CLOSED_REQUESTS = {"SeriesWriteRequest", "PatchedSeriesWriteRequest"}


def tighten_query_parameters(result, generator, request, public):
    """Postprocessing hook: every query parameter's schema as strict as its form field; a body
    with required fields is itself required (an operation documented by a plain JSON Schema,
    as the definition is, gets no such flag from the generator); closed bodies say so."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and "schema" in parameter:
                    parameter["schema"] = _tightened(parameter["name"], parameter["schema"])
            body = operation.get("requestBody")
            if body and any(
                content.get("schema", {}).get("required") for content in body["content"].values()
            ):
                body["required"] = True
    for name in CLOSED_REQUESTS & set(result.get("components", {}).get("schemas", {})):
        result["components"]["schemas"][name]["additionalProperties"] = False
    return result
