"""The LangGraph Server API as a door of the gateway, at /langgraph: LangGraph's clients
(`langgraph-sdk`, `@langchain/langgraph-sdk`) drive the teams unchanged (docs/langgraph-server.md).
A team is an assistant, a thread a conversation, a run a turn."""
