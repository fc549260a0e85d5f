"""YAML a user gives: a series' definition on its page, the command line's definition files. No
Django (the `recovery-lab` command reads it too).

Definitions are plain data: anchors and aliases are refused before anything is built (456
bytes of nested aliases had expanded into a 656 MB error message and 2.6 GB of a web worker),
so is nesting deeper than a definition needs (libyaml composes by recursion: 60 KB of "[" had
crashed the web worker, 200 KB had taken minutes of CPU), the text is capped, and no message
repeats more than a few words of the value."""

import yaml

DEFINITION_LIMIT_BYTES = 256 * 1024
SHOWN_CHARACTERS = 60
# The deepest definition is three levels (parameters: {name: [values]}); 32 leaves room for what
# a definition may grow into and keeps libyaml's recursion and its per-level costs small.
MAX_NESTING = 32
_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
# libyaml's loader where PyYAML was built with it: the same documents, faster
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlRefused(ValueError):
    """YAML that is not taken, with why in a sentence."""


def shown(value: object) -> str:
    """A value as a message may quote it: its repr, cut to a few words."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 5] + " ...'"


def _refuse_what_is_not_plain(text: str) -> None:
    """Read the events one by one (libyaml's parser keeps a stack of its own, no recursion) and
    stop at the first anchor, alias or level too deep: nothing is composed yet."""
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise YamlRefused(
                f"line {event.start_mark.line + 1}: anchors (&) and aliases (*) are not taken in a "
                "definition: write each value out"
            )
        if isinstance(event, _OPENS):
            depth += 1
            if depth > MAX_NESTING:
                raise YamlRefused(
                    f"line {event.start_mark.line + 1}: nested more than {MAX_NESTING} levels deep; a "
                    "definition needs three (parameters: {name: [values]})"
                )
        elif isinstance(event, _CLOSES):
            depth -= 1


def load_plain_yaml(text: str, limit_bytes: int = DEFINITION_LIMIT_BYTES) -> object:
    """The data of one YAML (or JSON) document of at most `limit_bytes`, with no anchor or alias
    and nested at most MAX_NESTING levels."""
    size = len(text.encode("utf-8"))
    if size > limit_bytes:
        limit = limit_bytes // 1024
        raise YamlRefused(f"it is {size / 1024:.0f} KiB: a definition may have {limit} KiB at most")
    try:
        _refuse_what_is_not_plain(text)
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or "cannot be read"
        raise YamlRefused(f"not YAML: {where}{str(problem)[:120]}") from None
