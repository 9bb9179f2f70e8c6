"""The memory store: namespaced JSON items shared across conversations (LangGraph's `store`).
`store.py` holds the `Store` type tools declare; the backends live one per module."""
