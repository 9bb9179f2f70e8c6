"""OpenAI Responses: /v1/responses (docs/responses.md)."""
