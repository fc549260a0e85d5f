"""A run's CPU profile: perf's samples of the restart folded into stacks (runner/profile.py), read
into a tree for the flame graph and a table of functions for comparisons. No Django.

A folded line is "process;outer;...;leaf COUNT". Frames perf could not name are the functions the
server's binary does not export (a Debian build without its debug symbols): a run of them is one
frame, NOT_EXPORTED, so two stacks that differ only in how many such frames they pass through
are one.
"""

import re
from collections import Counter

FOLDED_FILE = "profile.folded"
OTHER_STACKS = "[other stacks]"
NOT_EXPORTED = "[not exported]"
KERNEL_MARK, KERNEL = "_[k]", " [kernel]"
# The functions kept with a run for comparisons: the heaviest by their whole stack's share.
FUNCTIONS_KEPT = 300


# What perf appends to a symbol that is not part of the function's name: a symbol version
# ("pthread_mutex_lock@@GLIBC_2.2.5", "cfree@GLIBC_2.2.5") and the suffixes of GCC's clones
# ("row_ins_step.isra.0", "buf_page_get_gen.cold"). The same function is one name: 10.11 against
# 11.8 had drawn pthread_mutex_lock@@GLIBC_2.2.5 at -5 points and pthread_mutex_lock at +5.
_VERSION = re.compile(r"@@?[A-Za-z][A-Za-z0-9_.]*$")
_CLONE = re.compile(r"(?:\.(?:isra|constprop|part|cold|lto_priv|localalias)(?:\.\d+)?)+$")


def function_name(frame: str) -> str:
    """A frame's function as one name, whatever version or clone perf saw it as."""
    if frame.startswith("["):  # [not exported], [other stacks], [unknown]
        return frame
    kernel = frame.endswith(KERNEL)
    name = frame[: -len(KERNEL)] if kernel else frame
    name = _CLONE.sub("", _VERSION.sub("", name)) or name
    return name + KERNEL if kernel else name


def stacks_of(folded: bytes) -> list[tuple[list[str], int]]:
    """[(frames from the process down to the leaf, samples)]; lines that are no stack skipped."""
    found = []
    for line in folded.decode("utf-8", "replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = []
        for frame in stack.split(";"):
            frame = NOT_EXPORTED if frame == "[unknown]" else frame
            if frame.endswith(KERNEL_MARK):  # perf's mark of the kernel's functions
                frame = frame[: -len(KERNEL_MARK)] + KERNEL
            frame = function_name(frame)
            if not (frame == NOT_EXPORTED and frames and frames[-1] == NOT_EXPORTED):
                frames.append(frame)
        found.append((frames, int(count)))
    return found


def functions(stacks: list[tuple[list[str], int]]) -> dict:
    """{"samples": n, "functions": {name: [self share, total share]}}: a function's self share is
    the samples in which it was the leaf, its total share those it was anywhere in the stack
    (once per stack, however deep it recursed); the heaviest FUNCTIONS_KEPT by total."""
    samples = sum(count for _, count in stacks)
    if not samples:
        return {"samples": 0, "functions": {}}
    leaf, anywhere = Counter(), Counter()
    for frames, count in stacks:
        leaf[frames[-1]] += count
        for name in set(frames[1:]):  # the process's name is no function
            anywhere[name] += count
    heaviest = sorted(anywhere, key=lambda name: -anywhere[name])[:FUNCTIONS_KEPT]
    return {
        "samples": samples,
        "functions": {
            name: [round(leaf[name] / samples, 5), round(anywhere[name] / samples, 5)] for name in heaviest
        },
    }


def profile_summary(result_profile: dict | None, folded: bytes | None) -> dict:
    """What the run keeps: perf's own account (samples, frequency, or why there is no profile)
    and the functions' shares."""
    if not result_profile:
        return {}
    found = {
        key: result_profile[key]
        for key in ("frequency_hz", "event", "samples", "stacks", "stacks_cut", "error")
        if key in result_profile
    }
    if folded:
        found.update(functions(stacks_of(folded)))
    return found
