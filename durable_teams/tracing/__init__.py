"""OpenTelemetry traces and metrics of conversations."""
