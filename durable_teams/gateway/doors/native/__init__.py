"""The native HTTP API: /threads, its turns, events, questions, checkpoints and forks."""
