"""Teams as A2A agents: /a2a/{team} (the a2a extra; docs/a2a.md)."""
