"""Token usage at a terminal, and the optional price table that turns it into cost.

A price table is JSON, per million tokens, by model name:

    {"gpt-4o": {"input_per_million": 2.5, "output_per_million": 10.0}}

in the file named by `DURABLE_TEAMS_PRICES` (or passed to `load_prices`). Prices stay out of
the workflow: usage is recorded as tokens, and cost is worked out when it is shown, at the
prices of the day.
"""

from __future__ import annotations

import json
import os

from pydantic import ValidationError

from durable_teams.workflows.usage import ModelPrice, Tally, UsageLedger

PRICES_ENV = "DURABLE_TEAMS_PRICES"


def load_prices(path: str | None = None) -> dict[str, ModelPrice]:
    """The price table in `path` (default: $DURABLE_TEAMS_PRICES; none set: an empty table).
    A file that cannot be read or is not a table is a ValueError saying why."""
    path = path or os.environ.get(PRICES_ENV)
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return {model: ModelPrice.model_validate(price) for model, price in dict(data).items()}
    except (OSError, ValueError, TypeError, ValidationError) as err:
        raise ValueError(f"price table {path}: {err}".splitlines()[0]) from None


def _tally(t: Tally) -> str:
    return f"{t.input_tokens:,} in / {t.output_tokens:,} out tokens, {t.model_calls} model calls"


def usage_lines(ledger: UsageLedger | None, prices: dict[str, ModelPrice] | None = None) -> list[str]:
    """Usage as lines for a terminal: total (and cost, with a price table), the last turn,
    each agent. `prices=None` reads the table named by $DURABLE_TEAMS_PRICES."""
    if ledger is None or ledger.total.model_calls == 0:
        return ["usage: no model calls yet"]
    lines = [f"usage: {_tally(ledger.total)}"]
    try:
        table = load_prices() if prices is None else prices
    except ValueError as err:
        table, lines[0] = {}, lines[0] + f" (cost unknown: {err})"
    if table:
        cost = ledger.cost(table)
        missing = sorted(set(ledger.by_model) - set(table))
        lines[0] += (f", cost {cost:.4f}" if cost is not None
                     else f" (cost unknown: no price for {', '.join(missing)})")
    if ledger.turn_number:
        lines.append(f"  turn {ledger.turn_number}: {_tally(ledger.turn)}")
    lines += [f"  {agent}: {_tally(t)}" for agent, t in sorted(ledger.by_agent.items())]
    return lines
