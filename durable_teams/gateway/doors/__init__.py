"""The gateway's doors: one subpackage per protocol, each an adapter over the core (durable_teams/gateway/core/). Doors never import each other."""
