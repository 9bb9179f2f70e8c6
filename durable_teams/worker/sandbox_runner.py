"""A sandboxed workflow runner that does not enter the sandbox to name serialization contexts.

temporalio (1.35) encodes every workflow activation and completion in three passes over its
payloads (codec, external storage, storage references), and for every payload sequence in
every pass asks the workflow instance which serialization context applies (an activity's, a
child's, the workflow's) and, in the storage pass, which store context. In the sandbox each
question is an `exec` into it, about 0.2 ms; with 18 payload sequences a step (a model call and
a tool call, their inputs, results and summaries) that was about a quarter of a worker's CPU
(cProfile through `python -m bench.worker_proc --profile`), and the converter it picks is a
fresh copy made for that one sequence.

The answer matters only to a payload codec or an external storage that takes a context
(`WithSerializationContext`): the passes use nothing else of the converter. When the worker's
converter has neither (no codec, or one that ignores context, as durable_teams.encryption.codec's
encryption), the context cannot change a byte, so the instances made here say "no context"
(the converter as configured) and give the workflow's own store context, built once outside
the sandbox. With a context-aware codec or external storage `build_worker` keeps the SDK's
runner. The workflow itself runs in the sandbox exactly as before.

Both runners (`AnnouncingSandboxRunner`, the SDK's with nothing else changed, and
`ContextFreeSandboxRunner` on it) wrap each instance so that what its activations append to the
conversation's log is announced on the live hub (durable_teams/worker/log_announcer.py), when
given a `LogAnnouncer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.converter import (
    DataConverter,
    SerializationContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
    WithSerializationContext,
)
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.workflow import Info

from durable_teams.worker.log_announcer import LogAnnouncer


def needs_context(converter: DataConverter) -> bool:
    """Whether encoding with `converter` can depend on the serialization context."""
    return (converter.external_storage is not None
            or isinstance(converter.payload_codec, WithSerializationContext))


@dataclass(frozen=True)
class AnnouncingSandboxRunner(SandboxedWorkflowRunner):
    """The SDK's sandboxed runner, whose instances' appends `announcer` announces (none: not)."""

    announcer: LogAnnouncer | None = None

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        instance = super().create_instance(det)
        return instance if self.announcer is None else self.announcer.wrap(instance, det.info)


@dataclass(frozen=True)
class ContextFreeSandboxRunner(AnnouncingSandboxRunner):
    """`SandboxedWorkflowRunner` whose instances answer context questions without the sandbox.
    Only for a worker whose data converter does not `needs_context`."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return ContextFreeInstance(super().create_instance(det), det.info)


class ContextFreeInstance(WorkflowInstance):
    """A workflow instance that delegates all but the context questions."""

    def __init__(self, inner: WorkflowInstance, info: Info) -> None:
        self._inner = inner
        self._store_context = StorageDriverStoreContext(target=StorageDriverWorkflowInfo(
            namespace=info.namespace, id=info.workflow_id, run_id=info.run_id,
            type=info.workflow_type))

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        return self._inner.activate(act)

    def get_serialization_context(self, command_info: Any) -> SerializationContext | None:
        return None

    def get_external_store_context(self, command_info: Any) -> StorageDriverStoreContext:
        return self._store_context

    def get_info(self) -> Info:
        return self._inner.get_info()

    def get_thread_id(self) -> int | None:
        return self._inner.get_thread_id()
