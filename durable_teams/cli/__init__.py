"""The `durable-teams` command line."""
