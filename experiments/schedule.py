"""When a recurring series fires: a cron expression (minute hour day-of-month month day-of-week,
read by Celery's own crontab) or a name for the common ones. Times are UTC."""

from datetime import UTC, datetime

from celery.schedules import crontab

NAMED = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@nightly": "0 2 * * *",
    "@weekly": "0 2 * * 1",
}
MAX_LENGTH = 100


class ScheduleError(ValueError):
    """A schedule that is not a cron expression; the message says what is wrong."""


def parse(expression: object) -> crontab:
    if not isinstance(expression, str) or not expression.strip() or len(expression) > MAX_LENGTH:
        raise ScheduleError(
            "a cron expression (minute hour day month weekday) or @hourly, @daily, @nightly, @weekly"
        )
    text = NAMED.get(expression.strip(), expression.strip())
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"{expression!r}: five fields (minute hour day month weekday), e.g. '0 2 * * *', or one "
            f"of {', '.join(NAMED)}"
        )
    minute, hour, day_of_month, month_of_year, day_of_week = fields
    try:
        return crontab(
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month_of_year,
            day_of_week=day_of_week,
        )
    except (ValueError, TypeError) as exc:
        raise ScheduleError(f"{expression!r}: {exc}") from None


def next_after(expression: str, moment: datetime) -> datetime:
    """The first moment of the schedule strictly after `moment` (UTC)."""
    start, delta, _now = parse(expression).remaining_delta(moment.astimezone(UTC), tz=UTC)
    following = (start + delta).astimezone(UTC)
    return following if following > moment else next_after(expression, following)
