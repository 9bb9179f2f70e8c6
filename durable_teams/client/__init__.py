"""Talking to conversations: connect, start, send turns and replies, follow events, read state. No worker code."""
