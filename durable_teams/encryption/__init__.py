"""Keeping secrets: the payload codec, its server for the Web UI, redaction of logs."""
