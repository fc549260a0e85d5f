"""Recurring series: a definition on a schedule, fired by beat; the change points of its history
kept (a person's triage included); alerts sent once each through the outbox (`Notification`)."""

import logging
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from celery import current_app
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import EmailValidator, URLValidator
from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from experiments import roles, schedule
from experiments.analysis.series import SERIES_METRICS, all_change_points, history
from experiments.definition import EXPERIMENT_NAME, DefinitionError, validate_definition
from experiments.metrics import LABELS
from experiments.models import (
    TRIAGE_NEEDS_NOTE,
    ChangePoint,
    Channel,
    DeliveryStatus,
    Notification,
    Series,
    Triage,
)
from experiments.schedule import ScheduleError, next_after
from experiments.services import outbound
from experiments.services.audit import audit, audited_by
from experiments.services.experiments import create_experiment
from experiments.services.hosts import active_host_names
from experiments.services.outbound import DeliveryFailed

logger = logging.getLogger(__name__)

SEND_NOTIFICATION_TASK = "workers.tasks.send_notification_task"
MAX_ADDRESSES = 10
MAX_ATTEMPTS = 5
SERIES_FIELDS = (
    "name",
    "definition",
    "schedule",
    "enabled",
    "alert_threshold",
    "alert_emails",
    "alert_webhooks",
)


def _checked(data: dict, current: Series | None) -> dict:
    """The fields given, each checked; DefinitionError with a message per bad field."""
    errors: dict[str, list[str]] = {}
    unknown = sorted(set(data) - set(SERIES_FIELDS))
    if unknown:
        errors["series"] = [f"unknown field {name!r}; known: {', '.join(SERIES_FIELDS)}" for name in unknown]
    clean: dict = {}
    if "name" in data or current is None:
        name = data.get("name")
        # A firing is named after its series and moment, by the experiments' own rule.
        if not isinstance(name, str) or len(name.strip()) > 150 or not EXPERIMENT_NAME.match(name.strip()):
            errors["name"] = ["1-150 characters: letters, digits, spaces and _ . , : ( ) / + % = @ # -"]
        elif Series.objects.filter(name=name.strip()).exclude(pk=getattr(current, "pk", None)).exists():
            errors["name"] = [f"a series named {name.strip()!r} exists already"]
        else:
            clean["name"] = name.strip()
    if "definition" in data or current is None:
        try:
            clean["definition"] = validate_definition(data.get("definition"), active_host_names()).as_dict()
        except DefinitionError as exc:
            for field_name, messages in exc.errors.items():
                errors[f"definition.{field_name}"] = messages
    if "schedule" in data or current is None:
        try:
            minimum = timedelta(seconds=settings.SERIES_MIN_INTERVAL_S)
            schedule.check(data.get("schedule"), timezone.now(), minimum)
            clean["schedule"] = data["schedule"].strip()
        except ScheduleError as exc:
            errors["schedule"] = [str(exc)]
    if "enabled" in data:
        if not isinstance(data["enabled"], bool):
            errors["enabled"] = ["true or false"]
        else:
            clean["enabled"] = data["enabled"]
    if "alert_threshold" in data:
        threshold = data["alert_threshold"]
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 10:
            errors["alert_threshold"] = ["a share above 0 and at most 10 (0.1 alerts on 10% worse)"]
        else:
            clean["alert_threshold"] = float(threshold)
    for field_name, validator in (
        ("alert_emails", EmailValidator()),
        ("alert_webhooks", URLValidator(schemes=["http", "https"])),
    ):
        if field_name not in data:
            continue
        values = data[field_name]
        if not isinstance(values, list) or len(values) > MAX_ADDRESSES:
            errors[field_name] = [f"a list of at most {MAX_ADDRESSES}"]
            continue
        bad, unsafe = [], []
        for value in values:
            try:
                if not isinstance(value, str) or len(value) > 500:
                    raise ValidationError("too long")
                validator(value)
            except ValidationError:
                bad.append(str(value)[:100])
                continue
            if field_name == "alert_webhooks":
                try:
                    outbound.check_target(value)
                except outbound.UnsafeTarget as exc:
                    unsafe.append(str(exc))
        if bad or unsafe:
            errors[field_name] = ([f"not a valid address: {', '.join(bad)}"] if bad else []) + unsafe
        else:
            clean[field_name] = values
    if errors:
        raise DefinitionError(errors)
    return clean


def create_series(data: object, user=None) -> Series:
    """A series from a definition and a schedule; its first firing is the schedule's next moment."""
    if not isinstance(data, dict):
        raise DefinitionError({"series": ["an object with name, definition and schedule"]})
    clean = _checked(data, None)
    clean["next_firing_at"] = next_after(clean["schedule"], timezone.now())
    try:
        with transaction.atomic(), audited_by(user):
            return Series.objects.create(created_by=user, **clean)
    except IntegrityError:
        raise DefinitionError({"name": [f"a series named {clean['name']!r} exists already"]}) from None


def update_series(series_id: int, data: object, user=None) -> Series:
    """Change a series; a new definition applies to the firings to come, a new schedule moves the
    next firing to its next moment."""
    if not isinstance(data, dict):
        raise DefinitionError({"series": ["an object of the fields to change"]})
    with transaction.atomic(), audited_by(user):
        series = Series.objects.select_for_update().get(pk=series_id)
        clean = _checked(data, series)
        for field_name, value in clean.items():
            setattr(series, field_name, value)
        if "schedule" in clean:
            series.next_firing_at = next_after(series.schedule, timezone.now())
        series.save()
    return series


def fire_due_series(now: datetime | None = None) -> list[int]:
    """Create one experiment for each enabled series whose next firing has passed, and move the
    next firing past `now`: firings missed while beat was down become one. A series locked by
    another beat is left to it, and the database refuses a second experiment for one scheduled
    moment. Returns the experiments created."""
    now = now or timezone.now()
    created = []
    for series_id in Series.objects.filter(enabled=True, next_firing_at__lte=now).values_list(
        "id", flat=True
    ):
        with transaction.atomic():
            series = (
                Series.objects.select_for_update(skip_locked=True)
                .filter(pk=series_id, enabled=True, next_firing_at__lte=now)
                .first()
            )
            if series is None:
                continue
            owner_gone = _owner_may_not_fire(series.created_by)
            if owner_gone:
                _pause(series, f"paused: {owner_gone}; an admin or the owner, once allowed again, resumes it")
                continue
            due = series.next_firing_at
            series.next_firing_at = next_after(series.schedule, now)
            definition = {**series.definition, "name": f"{series.name} {due:%Y-%m-%d %H:%M}"}
            try:
                with transaction.atomic():
                    experiment, _ = create_experiment(
                        definition, user=series.created_by, series=series, fired_for=due
                    )
            except DefinitionError as exc:
                # The hosts or builds it names are gone: said on the series, the next firing tried.
                series.last_error = f"firing for {due:%Y-%m-%d %H:%M} refused: " + "; ".join(
                    f"{k}: {' '.join(v)}" for k, v in exc.errors.items()
                )
                logger.warning("series %s: %s", series.pk, series.last_error)
            except IntegrityError:
                logger.info("series %s: the firing for %s exists already", series.pk, due)
            else:
                series.last_error = ""
                created.append(experiment.pk)
            series.save(update_fields=["next_firing_at", "last_error"])
    return created


def _owner_may_not_fire(owner) -> str:
    """Why a series may not fire as its owner any more ("" when it may): a firing is an
    experiment made in the owner's name, so it needs what making one by hand needs."""
    if owner is None:
        return "its owner's account was deleted"
    if not owner.is_active:
        return f"its owner {owner.username} was deactivated"
    if not roles.may_experiment(owner):
        return f"its owner {owner.username} no longer has the experimenter role"
    return ""


def _pause(series: Series, reason: str) -> None:
    series.enabled, series.last_error = False, reason
    series.save(update_fields=["enabled", "last_error"])
    audit(series, None, reason)
    logger.warning("series %s: %s", series.pk, reason)


def _alarming(point: ChangePoint, threshold: float) -> bool:
    if not point.worse or not point.confirmed:  # confirmed: enough firings on each side
        return False
    if SERIES_METRICS[point.metric]:
        return point.ratio > 1 + threshold
    return point.ratio < 1 / (1 + threshold)


def refresh_change_points(series_id: int) -> list[ChangePoint]:
    """Search the series' history again; keep each change point found (its triage untouched),
    drop those no longer found that nobody triaged or was told of, and queue one alert for each
    that makes a metric worse beyond the series' threshold once CONFIRMING_FIRINGS firings stand
    on each side of it (until then it waits, "needs N more firings"). Returns the new ones."""
    as_of = timezone.now()  # the history read now: what analysed_at says was searched
    firings = history(series_id)
    found = all_change_points(firings)
    new, alerts = [], []
    with transaction.atomic():
        series = Series.objects.select_for_update().get(pk=series_id)
        if series.analysed_at is not None and series.analysed_at > as_of:
            # searches sent by consecutive firings may end out of order: one that read the
            # history later has already stored its answer, which this older one must not undo
            return []
        kept = {(p.metric, p.experiment_id): p for p in series.change_points.all()}
        seen = set()
        for answer in found:
            key = (answer.metric, answer.experiment_id)
            seen.add(key)
            values = answer.as_fields()
            point = kept.get(key)
            if point is None:
                point = ChangePoint.objects.create(
                    series=series, metric=answer.metric, experiment_id=answer.experiment_id, **values
                )
                new.append(point)
            else:
                ChangePoint.objects.filter(pk=point.pk).update(**values)
                point.refresh_from_db()
            if _alarming(point, series.alert_threshold) and not point.notifications.exists():
                alerts += _queue_alerts(point, series)  # one per change point, once confirmed
        stale = [p.pk for key, p in kept.items() if key not in seen and p.triage == Triage.NEW]
        ChangePoint.objects.filter(pk__in=stale, notifications__isnull=True).delete()
        series.analysed_at = as_of
        series.save(update_fields=["analysed_at"])
        transaction.on_commit(lambda: [_send_soon(n) for n in alerts])
    return new


def _queue_alerts(point: ChangePoint, series: Series) -> list[int]:
    queued = []
    for channel, targets in ((Channel.EMAIL, series.alert_emails), (Channel.WEBHOOK, series.alert_webhooks)):
        for target in targets:
            notification, made = Notification.objects.get_or_create(
                change_point=point, channel=channel, target=target
            )
            if made:
                queued.append(notification.pk)
    return queued


def alert_destinations(series: Series) -> list[str]:
    """Where a series' alerts go, by host only: what a viewer may know."""
    hosts = [f"mail to {address.rpartition('@')[2]}" for address in series.alert_emails]
    hosts += [f"webhook to {urlsplit(url).hostname}" for url in series.alert_webhooks]
    return sorted(set(hosts))


def shown_target(notification: Notification) -> str:
    """A notification's target by host only (mail to example.com, webhook to hooks.example.com)."""
    if notification.channel == Channel.EMAIL:
        return f"mail to {notification.target.rpartition('@')[2]}"
    return f"webhook to {urlsplit(notification.target).hostname}"


def _send_soon(notification_id: int) -> None:
    try:
        current_app.send_task(SEND_NOTIFICATION_TASK, args=[notification_id], retry=False)
    except (BrokerUnreachable, OSError) as exc:
        logger.warning("broker unreachable, alert %s goes with beat's next round: %s", notification_id, exc)


def alert_payload(point: ChangePoint) -> dict:
    label = LABELS.get(point.metric, point.metric)
    link = f"{settings.SITE_URL}{point.series.get_absolute_url()}#change-point-{point.pk}"
    interval = (
        f" (95% CI {point.ratio_low:.2f}-{point.ratio_high:.2f}x)" if point.ratio_low is not None else ""
    )
    return {
        "series": point.series.name,
        "series_id": point.series_id,
        "metric": point.metric,
        "summary": (
            f"{point.series.name}: {label} {point.ratio:.2f}x{interval} from firing {point.firing_index} "
            f"(median {point.before_median:.4g} -> {point.after_median:.4g})"
        ),
        "ratio": point.ratio,
        "ratio_ci": [point.ratio_low, point.ratio_high] if point.ratio_low is not None else None,
        "before_median": point.before_median,
        "after_median": point.after_median,
        "firing_index": point.firing_index,
        "experiment_id": point.experiment_id,
        "differences": point.differences,
        "link": link,
    }


def _header_safe(text: str) -> str:
    """A mail header's text: control characters (a newline in a series' name) become spaces."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def _deliver(notification: Notification, payload: dict) -> None:
    """Send it; DeliveryFailed says why not (a public reason, a detail for admins)."""
    if notification.channel == Channel.EMAIL:
        body = "\n".join([payload["summary"], "", *payload["differences"], "", payload["link"]])
        subject = _header_safe(f"Recovery Lab: {payload['summary']}")[:200]
        try:
            send_mail(subject, body, None, [notification.target])
        except Exception as exc:  # any failure is the attempt's, on record; the outbox goes on
            detail = f"{exc.__class__.__name__}: {exc}"
            raise DeliveryFailed("the mail server did not take it", detail) from exc
    else:
        outbound.post_json(notification.target, payload)


def send_notification(notification_id: int) -> str:
    """Send one alert unless it was sent already; record what happened. Returns its status. The
    row stays locked while it is sent, so two workers never send it both. Runs twice: the second
    finds it sent (or failed) and sends nothing."""
    with transaction.atomic():
        notification = (
            # the alert's row only: alerts of one series go out side by side
            Notification.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("change_point__series")
            .filter(pk=notification_id)
            .first()
        )
        if notification is None or notification.status != DeliveryStatus.PENDING:
            return notification.status if notification else "busy"
        notification.attempts += 1
        try:
            _deliver(notification, alert_payload(notification.change_point))
        except DeliveryFailed as exc:
            notification.error, notification.error_detail = exc.public[:1000], exc.detail[:2000]
            if notification.attempts >= MAX_ATTEMPTS or exc.permanent:
                notification.status = DeliveryStatus.FAILED
        except Exception as exc:  # our own bug: on record, never left pending to loop
            logger.exception("alert %s could not be sent", notification.pk)
            notification.error = "not sent: an error in Recovery Lab (see the worker's log)"
            notification.error_detail = f"{exc.__class__.__name__}: {exc}"[:2000]
            notification.status = DeliveryStatus.FAILED
        else:
            notification.status, notification.sent_at = DeliveryStatus.SENT, timezone.now()
            notification.error = notification.error_detail = ""
        notification.save(update_fields=["attempts", "error", "error_detail", "status", "sent_at"])
        return notification.status


def pending_notifications() -> list[int]:
    return list(Notification.objects.filter(status=DeliveryStatus.PENDING).values_list("id", flat=True))


def triage_change_point(point_id: int, triage: object, note: object = None, user=None) -> ChangePoint:
    """A person's word on a change point: acknowledged (a regression being worked on), expected
    or a false alarm (each with a note saying why), fixed, or back to not looked at."""
    errors = {}
    if triage not in Triage.values:
        errors["triage"] = [f"one of {', '.join(Triage.values)}"]
    if note is not None and (not isinstance(note, str) or len(note) > 2000):
        errors["note"] = ["text of at most 2000 characters"]
    if triage in TRIAGE_NEEDS_NOTE and not (note or "").strip():
        errors["note"] = [TRIAGE_NEEDS_NOTE[triage]]
    if errors:
        raise DefinitionError(errors)
    with transaction.atomic(), audited_by(user):
        point = ChangePoint.objects.select_for_update().get(pk=point_id)
        point.triage, point.triaged_by, point.triaged_at = triage, user, timezone.now()
        if note is not None:
            point.note = note
        point.save(update_fields=["triage", "note", "triaged_by", "triaged_at"])
    return point
