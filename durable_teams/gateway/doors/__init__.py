"""The gateway's doors: one subpackage per protocol, each an adapter over the core
(durable_teams/gateway/core/) that gives one `mount` function (core/mounts.py), listed in
durable_teams/gateway/asgi.py. Doors never import each other."""
