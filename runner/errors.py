"""The runner's one exception: a failure reported to the user as it is."""


class RunFailed(Exception):
    """A failure to report to the user as it is. `permanent`: trying again cannot help (a bad
    spec, a missing binary, a server that never came back); otherwise the run may be retried."""

    def __init__(self, message: str, permanent: bool = True):
        super().__init__(message)
        self.permanent = permanent
