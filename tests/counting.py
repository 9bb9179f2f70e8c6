"""A client that counts the queries it asks, by name (what a door asks the workflow)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from temporalio.client import Client, Interceptor, OutboundInterceptor, QueryWorkflowInput


class CountingQueries(Interceptor):
    """Counts the queries a client asks, by name."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        counter = self

        class Counting(OutboundInterceptor):
            async def query_workflow(self, input: QueryWorkflowInput) -> Any:
                counter.asked[input.query] += 1
                return await super().query_workflow(input)
        return Counting(next)


def counted(client: Client) -> tuple[Client, CountingQueries]:
    queries = CountingQueries()
    config = client.config()
    config["interceptors"] = [*config["interceptors"], queries]
    return Client(**config), queries
