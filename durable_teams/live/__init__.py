"""Live tokens: a model's text deltas between the worker and readers, outside history."""
