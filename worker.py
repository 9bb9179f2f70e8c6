"""Run a durable-teams worker: `python worker.py [--team module:TEAMS]` (same as
`durable-teams worker`). The worker's code lives in `durable_teams.worker.run`."""

from durable_teams.worker.run import main

if __name__ == "__main__":
    main()
