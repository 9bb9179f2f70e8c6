"""python -m durable_teams: the CLI."""

from durable_teams.cli.main import main

main()
