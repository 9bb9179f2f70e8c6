"""A client that counts the queries it asks, by name (what a door asks the workflow), and the
descriptions it reads."""

from __future__ import annotations

from collections import Counter
from typing import Any

from temporalio.client import (
    Client,
    DescribeWorkflowInput,
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
)


class CountingQueries(Interceptor):
    """Counts the queries a client asks, by name, and its `describe` calls (`described`)."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()
        self.described = 0

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        counter = self

        class Counting(OutboundInterceptor):
            async def query_workflow(self, input: QueryWorkflowInput) -> Any:
                counter.asked[input.query] += 1
                return await super().query_workflow(input)

            async def describe_workflow(self, input: DescribeWorkflowInput) -> Any:
                counter.described += 1
                return await super().describe_workflow(input)
        return Counting(next)


def counted(client: Client) -> tuple[Client, CountingQueries]:
    queries = CountingQueries()
    config = client.config()
    config["interceptors"] = [*config["interceptors"], queries]
    return Client(**config), queries
