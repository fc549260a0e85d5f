"""The rules one value of a definition must keep, each a function that returns the value as it is
kept or raises ValueError saying what is wrong with it. No Django."""

import re
from collections.abc import Callable

from recovery_lab_cli.units import SizeError, format_size, parse_size
from recovery_lab_cli.yaml_input import shown

# Each check carries the JSON Schema of what it accepts (`check.schema`): the API's schema of a
# definition is made from the same tables that validate one (definition_json_schema).
SIZE_PATTERN = r"^[1-9][0-9]{0,6}[KMGT]$"


def described(schema: dict):
    def attach(check):
        check.schema = schema
        return check

    return attach


def int_between(low: int, high: int) -> Callable[[object], int]:
    @described({"type": "integer", "minimum": low, "maximum": high})
    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,12}", value.strip()):
                value = int(value)
            else:
                raise ValueError(f"{shown(value)} is not a whole number")
        if not low <= value <= high:
            raise ValueError(f"{value} is outside {low}..{high}")
        return value

    return check


def size_between(low: str, high: str) -> Callable[[object], str]:
    low_bytes, high_bytes = parse_size(low), parse_size(high)

    @described({"type": "string", "pattern": SIZE_PATTERN, "description": f"a size from {low} to {high}"})
    def check(value: object) -> str:
        try:
            size_bytes = parse_size(value)  # type: ignore[arg-type]
        except SizeError as exc:
            raise ValueError(str(exc)) from None
        if not low_bytes <= size_bytes <= high_bytes:
            raise ValueError(f"{value} is outside {low}..{high}")
        return format_size(size_bytes)

    return check


def one_of(*choices: object) -> Callable[[object], object]:
    @described({"enum": list(choices)})
    def check(value: object) -> object:
        for choice in choices:
            if value == choice or (isinstance(value, str) and value.strip() == str(choice)):
                return choice
        raise ValueError(f"{shown(value)} is not one of {', '.join(map(str, choices))}")

    return check


def boolean() -> Callable[[object], bool]:
    @described({"type": "boolean"})
    def check(value: object) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ValueError(f"{shown(value)} is not true or false")

    return check


def matching(pattern: re.Pattern, what: str) -> Callable[[object], str]:
    @described({"type": "string", "pattern": pattern.pattern})
    def check(value: object) -> str:
        if not isinstance(value, str) or not pattern.match(value):
            raise ValueError(f"{shown(value)} is not {what}")
        return value

    return check
