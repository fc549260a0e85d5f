"""A run's CPU profile: perf's samples of the restart folded into stacks (runner/profile.py), read
into a tree for the flame graph and a table of functions for comparisons. No Django.

A folded line is "process;outer;...;leaf COUNT". Frames perf could not name are the functions the
server's binary does not export (a Debian build without its debug symbols): a run of them is one
frame, NOT_EXPORTED, so two stacks that differ only in how many such frames they pass through
are one.
"""

from collections import Counter

FOLDED_FILE = "profile.folded"
OTHER_STACKS = "[other stacks]"
NOT_EXPORTED = "[not exported]"
KERNEL_MARK, KERNEL = "_[k]", " [kernel]"
# The functions kept with a run for comparisons: the heaviest by their whole stack's share.
FUNCTIONS_KEPT = 300


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
