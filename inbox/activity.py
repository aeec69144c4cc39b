"""What the activity page and the strip above the inbox show, from the
database in a few aggregate queries (no row per proposal is read into
Python): proposals and decisions per day by agent, acceptance rate per agent
per week, the backlog and the age of what waits, what falls due for review
in the next 8 weeks, and how long a decision took.

Only what the viewer may see: proposals of the spaces they decide in and
records of the spaces they may read (inbox.viewer). Days are the
site's local days.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import Count, DateTimeField, F, FloatField, Func, IntegerField, Min, Q, Value
from django.utils import timezone

from reviews.models import Proposal, ProposalState, Record, RecordStatus

from . import viewer

DAYS = 30
WEEKS = 12
DUE_WEEKS = 8
AGENTS_SHOWN = 5  # the busiest; the rest are "others"
OTHERS = "others"
PEOPLE = "people"  # proposals made by a person (an import, a reviewer's own)
AGE_BUCKETS = [
    ("under 1 day", timedelta(0), timedelta(days=1)),
    ("1–3 days", timedelta(days=1), timedelta(days=3)),
    ("3–7 days", timedelta(days=3), timedelta(days=7)),
    ("1–2 weeks", timedelta(days=7), timedelta(days=14)),
    ("2–4 weeks", timedelta(days=14), timedelta(days=28)),
    ("over 4 weeks", timedelta(days=28), None),
]
AGE_SHORT = ["<1d", "1–3d", "3–7d", "1–2w", "2–4w", ">4w"]  # the chart's axis; the table says them in full
DECIDE_BUCKETS = [
    ("under 1 hour", timedelta(0), timedelta(hours=1)),
    ("1–8 hours", timedelta(hours=1), timedelta(hours=8)),
    ("8–24 hours", timedelta(hours=8), timedelta(days=1)),
    ("1–3 days", timedelta(days=1), timedelta(days=3)),
    ("3–7 days", timedelta(days=3), timedelta(days=7)),
    ("over 7 days", timedelta(days=7), None),
]


DECIDE_SHORT = ["<1h", "1–8h", "8–24h", "1–3d", "3–7d", ">7d"]


@dataclass
class Activity:
    days: list[date] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    proposed: dict[str, list[int]] = field(default_factory=dict)  # agent -> per day
    decided: dict[str, list[int]] = field(default_factory=dict)  # agent -> per day
    weeks: list[date] = field(default_factory=list)
    rates: dict[str, list[float | None]] = field(default_factory=dict)  # agent -> per week, None: nothing decided
    rate_counts: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # (accepted, decided)
    backlog: list[int] = field(default_factory=list)  # pending at the end of each day
    pending: int = 0
    ages: list[tuple[str, int]] = field(default_factory=list)
    oldest: datetime | None = None
    due_weeks: list[date] = field(default_factory=list)
    due: list[int] = field(default_factory=list)
    overdue: int = 0
    decide_times: list[tuple[str, int]] = field(default_factory=list)
    decided_total: int = 0


class _Seconds(Func):
    """Seconds from ``b`` to ``a``, computed by the database itself (Django's
    portable date arithmetic calls back into Python for every row on SQLite,
    which made this page ten times slower at 10,000 decisions)."""

    output_field = FloatField()

    def __init__(self, a: str, b: str) -> None:
        super().__init__(F(a), F(b))

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(
            compiler,
            connection,
            template="((julianday(%(expressions)s)) * 86400.0)",
            arg_joiner=") - julianday(",
            **extra,
        )

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(
            compiler, connection, template="EXTRACT(EPOCH FROM (%(expressions)s))", arg_joiner=" - ", **extra
        )


def _midnight(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, datetime.min.time()))


class _Bucket(Func):
    """Which span of ``width`` since ``origin`` a timestamp falls in (0, 1, …),
    computed by the database, so rows are grouped by it in one pass. Spans are
    fixed lengths from a local midnight: on the day a clock changes for summer
    time a day's edge is an hour off, which a chart of days can bear."""

    output_field = IntegerField()

    def __init__(self, field_name: str, origin: datetime, width: timedelta) -> None:
        super().__init__(F(field_name), Value(origin, output_field=DateTimeField()))
        self.width = width.total_seconds()

    def as_sqlite(self, compiler, connection, **extra):
        template = f"CAST(((julianday(%(expressions)s)) * 86400.0 / {self.width}) AS INTEGER)"
        return self.as_sql(compiler, connection, template=template, arg_joiner=") - julianday(", **extra)

    def as_postgresql(self, compiler, connection, **extra):
        template = f"FLOOR(EXTRACT(EPOCH FROM (%(expressions)s)) / {self.width})::integer"
        return self.as_sql(compiler, connection, template=template, arg_joiner=" - ", **extra)


def _name(agent: str | None) -> str:
    return agent or PEOPLE


def _span(now: datetime) -> tuple[list[date], datetime]:
    today = timezone.localdate(now)
    days = [today - timedelta(days=DAYS - 1 - n) for n in range(DAYS)]
    start = timezone.make_aware(datetime.combine(days[0], datetime.min.time()))
    return days, start


def collect(now: datetime | None = None) -> Activity:
    """Every figure of the activity page."""
    now = now or timezone.now()
    days, start = _span(now)
    out = Activity(days=days)
    mine = viewer.proposals(Proposal.objects.all())

    week_start = days[-1] - timedelta(days=days[-1].weekday()) - timedelta(weeks=WEEKS - 1)
    weeks = [week_start + timedelta(weeks=n) for n in range(WEEKS)]
    out.weeks = weeks
    one_day, one_week = timedelta(days=1), timedelta(weeks=1)
    origin, week_origin = _midnight(days[0]), _midnight(week_start)
    proposed_rows = (
        mine.filter(created_at__gte=origin)
        .annotate(day=_Bucket("created_at", origin, one_day))
        .values("agent__name", "day")
        .annotate(n=Count("id"))
    )
    decided = mine.exclude(state__in=[ProposalState.PENDING, ProposalState.WITHDRAWN])
    decided_rows = (
        decided.filter(decided_at__gte=origin)
        .annotate(day=_Bucket("decided_at", origin, one_day))
        .values("agent__name", "day")
        .annotate(n=Count("id"))
    )
    weekly_rows = (
        decided.filter(decided_at__gte=week_origin)
        .annotate(week=_Bucket("decided_at", week_origin, one_week))
        .values("agent__name", "week")
        .annotate(n=Count("id"), accepted=Count("id", filter=Q(state=ProposalState.ACCEPTED)))
    )
    proposed_list = [r for r in proposed_rows if 0 <= r["day"] < DAYS]
    decided_list = [r for r in decided_rows if 0 <= r["day"] < DAYS]
    weekly_list = [r for r in weekly_rows if 0 <= r["week"] < WEEKS]
    totals: dict[str, int] = {}
    for row in proposed_list + decided_list:
        name = _name(row["agent__name"])
        totals[name] = totals.get(name, 0) + row["n"]
    ranked = sorted((a for a in totals if totals[a]), key=lambda a: (-totals[a], a))
    shown = ranked[:AGENTS_SHOWN]
    out.agents = shown + ([OTHERS] if len(ranked) > AGENTS_SHOWN else [])

    def group(agent: str | None) -> str:
        name = _name(agent)
        return name if name in shown else OTHERS

    out.proposed = {a: [0] * DAYS for a in out.agents}
    out.decided = {a: [0] * DAYS for a in out.agents}
    created_per_day = [0] * DAYS
    decided_per_day = [0] * DAYS
    for row in proposed_list:
        out.proposed[group(row["agent__name"])][row["day"]] += row["n"]
        created_per_day[row["day"]] += row["n"]
    for row in decided_list:
        out.decided[group(row["agent__name"])][row["day"]] += row["n"]
        decided_per_day[row["day"]] += row["n"]
    counts: dict[str, list[list[int]]] = {}
    for week_row in weekly_list:
        cell = counts.setdefault(group(week_row["agent__name"]), [[0, 0] for _ in range(WEEKS)])[week_row["week"]]
        cell[0] += week_row["accepted"]
        cell[1] += week_row["n"]
    out.rate_counts = {a: [(c[0], c[1]) for c in counts.get(a, [[0, 0]] * WEEKS)] for a in out.agents}
    out.rates = {a: [(acc / dec if dec else None) for acc, dec in out.rate_counts[a]] for a in out.agents}

    # What waits, by age, in one query; the backlog of each past day follows from
    # today's and the days' arrivals and decisions (withdrawals count as decided).
    waiting = mine.filter(state=ProposalState.PENDING)
    buckets = {}
    for n, (_label, low, high) in enumerate(AGE_BUCKETS):
        when = Q(created_at__lte=now - low) & (Q(created_at__gt=now - high) if high is not None else Q())
        buckets[f"b{n}"] = Count("id", filter=when)
    aged = waiting.aggregate(total=Count("id"), oldest=Min("created_at"), **buckets)
    out.pending = aged["total"]
    out.oldest = aged["oldest"]
    out.ages = [(label, aged[f"b{n}"] or 0) for n, (label, _low, _high) in enumerate(AGE_BUCKETS)]
    withdrawn = (
        mine.filter(state=ProposalState.WITHDRAWN, decided_at__gte=origin)
        .annotate(day=_Bucket("decided_at", origin, one_day))
        .values("day")
        .annotate(n=Count("id"))
    )
    for left in withdrawn:
        if 0 <= left["day"] < DAYS:
            decided_per_day[left["day"]] += left["n"]
    backlog = [0] * DAYS
    level = out.pending
    for i in range(DAYS - 1, -1, -1):
        backlog[i] = level
        level = max(level - created_per_day[i] + decided_per_day[i], 0)
    out.backlog = backlog

    # Due for review: approved records by the week their review date falls in.
    today = days[-1]
    records = viewer.records(Record.objects.filter(status=RecordStatus.APPROVED))
    due_rows = (
        records.filter(review_by__lte=today + timedelta(weeks=DUE_WEEKS)).values("review_by").annotate(n=Count("id"))
    )
    out.due_weeks = [today + timedelta(weeks=n) for n in range(DUE_WEEKS)]
    out.due = [0] * DUE_WEEKS
    for due_row in due_rows:
        delta = (due_row["review_by"] - today).days
        if delta < 0:
            out.overdue += due_row["n"]
        else:
            out.due[min(delta // 7, DUE_WEEKS - 1)] += due_row["n"]

    # Time to decide, for what was decided in the last DAYS days.
    timed = (
        mine.filter(decided_at__gte=start)
        .exclude(state__in=[ProposalState.PENDING, ProposalState.WITHDRAWN])
        .annotate(took=_Seconds("decided_at", "created_at"))
    )
    spans = {}
    for n, (_label, low, high) in enumerate(DECIDE_BUCKETS):
        when = Q(took__gte=low.total_seconds()) & (Q(took__lt=high.total_seconds()) if high is not None else Q())
        spans[f"b{n}"] = Count("id", filter=when)
    found = timed.aggregate(total=Count("id"), **spans)
    out.decided_total = found["total"]
    out.decide_times = [(label, found[f"b{n}"] or 0) for n, (label, _low, _high) in enumerate(DECIDE_BUCKETS)]
    return out


@dataclass
class Strip:
    pending: int
    oldest: datetime | None
    decided_week: int
    due_soon: int  # falls due in the next 8 weeks
    per_day: list[int]  # proposals per day, last 14 days


def strip(now: datetime | None = None) -> Strip:
    """The few figures above the inbox: three aggregate queries."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    first = today - timedelta(days=13)
    start = timezone.make_aware(datetime.combine(first, datetime.min.time()))
    mine = viewer.proposals(Proposal.objects.all())
    week_ago = now - timedelta(days=7)
    head = mine.aggregate(
        pending=Count("id", filter=Q(state=ProposalState.PENDING)),
        decided_week=Count("id", filter=Q(decided_at__gte=week_ago) & ~Q(state=ProposalState.PENDING)),
    )
    oldest = (
        mine.filter(state=ProposalState.PENDING).order_by("created_at").values_list("created_at", flat=True).first()
    )
    per_day = [0] * 14
    for row in (
        mine.filter(created_at__gte=start)
        .annotate(day=_Bucket("created_at", start, timedelta(days=1)))
        .values("day")
        .annotate(n=Count("id"))
    ):
        if 0 <= row["day"] < 14:
            per_day[row["day"]] += row["n"]
    due_soon = viewer.records(
        Record.objects.filter(
            status=RecordStatus.APPROVED, review_by__gte=today, review_by__lte=today + timedelta(weeks=DUE_WEEKS)
        )
    ).count()
    return Strip(
        pending=head["pending"], oldest=oldest, decided_week=head["decided_week"], due_soon=due_soon, per_day=per_day
    )
