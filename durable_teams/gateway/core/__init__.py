"""The gateway's protocol-neutral core: threads, exchanges and their outcomes, idempotency keys, the front door (auth, scopes, exposure, limits), error answers, SSE."""
