"""When a recurring series fires: a cron expression (minute hour day-of-month month day-of-week,
read by cronsim, healthchecks' cron library, with cron's own meaning: a day of the month and a
day of the week together fire on either) or a name for the common ones. Times are UTC."""

import itertools
from datetime import UTC, datetime, timedelta

from cronsim import CronSim, CronSimError

NAMED = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@nightly": "0 2 * * *",
    "@weekly": "0 2 * * 1",
}
MAX_LENGTH = 100
# Firings looked at for the shortest gap: a schedule's minute and hour fields repeat within a day.
GAP_SAMPLE = 100


class ScheduleError(ValueError):
    """A schedule that is not a cron expression; the message says what is wrong."""


def _moments(expression: object, moment: datetime) -> CronSim:
    """The schedule's moments strictly after `moment`, in order."""
    if not isinstance(expression, str) or not expression.strip() or len(expression) > MAX_LENGTH:
        raise ScheduleError(
            "a cron expression (minute hour day month weekday) or @hourly, @daily, @nightly, @weekly"
        )
    text = NAMED.get(expression.strip(), expression.strip())
    if len(text.split()) != 5:
        raise ScheduleError(
            f"{expression!r}: five fields (minute hour day month weekday), e.g. '0 2 * * *', or one "
            f"of {', '.join(NAMED)}"
        )
    try:
        return CronSim(text, moment.astimezone(UTC))
    except CronSimError as exc:
        # cronsim's words: "Bad day-of-month" for the 30th of February, which never comes
        raise ScheduleError(f"{expression!r}: {str(exc).lower()}") from None


def _next_moments(expression: object, moment: datetime, count: int) -> list[datetime]:
    """The schedule's next `count` moments strictly after `moment` (UTC); at least one."""
    moments = [m.astimezone(UTC) for m in itertools.islice(_moments(expression, moment), count)]
    if not moments:
        raise ScheduleError(f"{expression!r}: no such moment ever comes")
    return moments


def _gap(moments: list[datetime]) -> timedelta:
    return min((b - a for a, b in itertools.pairwise(moments)), default=timedelta.max)


def next_after(expression: str, moment: datetime) -> datetime:
    """The first moment of the schedule strictly after `moment` (UTC)."""
    return _next_moments(expression, moment, 1)[0]


def shortest_gap(expression: str, moment: datetime, firings: int = GAP_SAMPLE) -> timedelta:
    """The shortest time between two of the schedule's next `firings` moments after `moment`."""
    return _gap(_next_moments(expression, moment, firings))


def check(expression: object, moment: datetime, minimum: timedelta) -> datetime:
    """The schedule's next moment after `moment`; ScheduleError when it is not a schedule, never
    fires, or fires more often than `minimum` apart."""
    moments = _next_moments(expression, moment, GAP_SAMPLE)
    gap = _gap(moments)
    if gap < minimum:
        raise ScheduleError(
            f"{expression!r} fires {_spoken(gap)} apart; a series may fire at most every {_spoken(minimum)} "
            "(SERIES_MIN_INTERVAL_S)"
        )
    return moments[0]


def _spoken(gap: timedelta) -> str:
    seconds = int(gap.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"
