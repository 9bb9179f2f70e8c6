"""Whether a LangGraph cron's schedule can ever fire: a crontab line whose days of the month
fall in none of its months (`0 0 30 2 *`, February 30th; `0 0 31 4,6 *`) never does, on a
Temporal Schedule as anywhere (Temporal takes a day of the month and a weekday together: both
must hold, so a weekday does not save it). Such a cron is refused before it is made, naming
its schedule. Fields this does not read (`L`, `W`, `#`, names of weekdays) are left to
Temporal's own check. Pure: no Temporal calls."""

from __future__ import annotations

MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""The most days each month has (February's 29th: a leap year's)."""
MONTH_NAMES = {name: n for n, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}


def _number(text: str, names: dict[str, int]) -> int | None:
    if text.isascii() and text.isdigit():
        return int(text)
    return names.get(text.lower())


def _part(part: str, low: int, high: int, names: dict[str, int]) -> set[int] | None:
    """The values one comma-separated part of a field names (`*`, `5`, `1-10`, `*/2`,
    `3-20/5`), or None when it is not read here."""
    span, _, step_text = part.partition("/")
    step = _number(step_text, {}) if step_text else 1
    if not step:
        return None
    if span in ("*", "?"):
        first, last = low, high
    else:
        start, dash, end = span.partition("-")
        first_value = _number(start, names)
        last_value = _number(end, names) if dash else (high if step_text else first_value)
        if first_value is None or last_value is None:
            return None
        first, last = first_value, last_value
    if not low <= first <= last <= high:
        return None
    return set(range(first, last + 1, step))


def field_values(field: str, low: int, high: int, names: dict[str, int] | None = None) -> set[int] | None:
    """The values a crontab field names, or None when it is not read here."""
    found: set[int] = set()
    for part in field.split(","):
        values = _part(part, low, high, names or {})
        if values is None:
            return None
        found |= values
    return found


def never_fires(expression: str) -> bool:
    """True when the crontab line's days of the month fall in none of its months."""
    fields = expression.split()
    if len(fields) != 5:  # a named schedule (@daily): it fires
        return False
    days, months = field_values(fields[2], 1, 31), field_values(fields[3], 1, 12, MONTH_NAMES)
    if days is None or months is None:
        return False
    return not any(day <= MONTH_DAYS[month - 1] for month in months for day in days)
