"""The HTTP gateway: `durable-teams serve` (native endpoints with server-sent events, an
OpenAI-compatible `/v1/chat/completions`, and the web inbox). Stateless: every request talks
to Temporal through the client, so several gateways can run behind a load balancer.

Needs the `gateway` extra: `pip install 'durable-teams[gateway]'`.
"""

from durable_teams.gateway.asgi import create_app

__all__ = ["create_app"]
