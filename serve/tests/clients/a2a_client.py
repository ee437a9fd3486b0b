"""Talks to motet's A2A endpoint with the official `a2a-sdk` client and prints what it got, one
JSON object a line, for serve/tests/a2a_python.rs to check.

    python a2a_client.py BASE_URL TOKEN AGENT scripted|model

`scripted` (the janitor agent on a scripted model, whose turns the test queued in this order):
the root and the agent's card through the SDK's card resolver; a blocking send; a streamed send;
a streamed send that stops for an approval (input-required), answered `yes` on the task with a
blocking send; a question answered with text; a cancel (and a second one, refused); a
subscription to a task that waits, approved with a data part from another client; a task that
does not exist; a finished task subscribed to; a wrong token. `model` (any agent on a real
model): the card and one streamed send. Nothing is retried, so every request the server sees is
one this script made.
"""

import asyncio
import json
import sys

import httpx

from google.protobuf.json_format import MessageToDict

from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    AgentCardResolutionError,
    ClientConfig,
    ClientFactory,
)
from a2a.helpers import new_data_part, new_message, new_text_message
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)


def emit(what, **fields):
    print(json.dumps({"what": what, **fields}), flush=True)


def state(value):
    return TaskState.Name(value)


def ask(text, task=None, context=None):
    return SendMessageRequest(
        message=new_text_message(text, task_id=task, context_id=context, role=Role.ROLE_USER)
    )


class Collected:
    """A stream's events, in order, with the answer artifact added up as A2A says."""

    def __init__(self):
        self.kinds = []
        self.states = []
        self.task = None
        self.artifact = ""
        self.chunks = 0
        self.last_chunk = False
        self.waiting_text = None
        self.waiting_data = None
        self.said = None

    def take(self, event):
        kind = event.WhichOneof("payload")
        self.kinds.append(kind)
        if kind == "task":
            self.task = event.task
            self.status(event.task.status)
        elif kind == "status_update":
            self.status(event.status_update.status)
        elif kind == "artifact_update":
            update = event.artifact_update
            text = "".join(p.text for p in update.artifact.parts)
            self.artifact = self.artifact + text if update.append else text
            self.chunks += 1
            self.last_chunk = update.last_chunk

    def status(self, status):
        self.states.append(state(status.state))
        if status.message.parts:
            self.said = "".join(p.text for p in status.message.parts)
        if status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            for part in status.message.parts:
                if part.HasField("text"):
                    self.waiting_text = part.text
                if part.HasField("data"):
                    self.waiting_data = MessageToDict(part.data)

    def line(self, what):
        emit(
            what,
            kinds=self.kinds,
            states=self.states,
            task=self.task.id if self.task else None,
            context=self.task.context_id if self.task else None,
            artifact=self.artifact,
            chunks=self.chunks,
            last_chunk=self.last_chunk,
            waiting_text=self.waiting_text,
            waiting_data=self.waiting_data,
            said=self.said,
        )


async def collect(stream):
    got = Collected()
    async for event in stream:
        got.take(event)
    return got


def task_line(what, task):
    emit(
        what,
        id=task.id,
        context=task.context_id,
        state=state(task.status.state),
        artifact="".join(p.text for a in task.artifacts for p in a.parts),
        history=[(Role.Name(m.role), "".join(p.text for p in m.parts)) for m in task.history],
        status_text="".join(p.text for p in task.status.message.parts),
    )


async def scripted(base, token, agent):
    headers = {"Authorization": f"Bearer {token}"}
    http = httpx.AsyncClient(headers=headers, timeout=120)
    resolver = A2ACardResolver(http, base)
    root = await resolver.get_agent_card()
    card = await resolver.get_agent_card(f"/a2a/{agent}/.well-known/agent-card.json")
    for what, c in (("root_card", root), ("card", card)):
        emit(
            what,
            name=c.name,
            url=c.supported_interfaces[0].url,
            binding=c.supported_interfaces[0].protocol_binding,
            version=c.supported_interfaces[0].protocol_version,
            streaming=c.capabilities.streaming,
            schemes=sorted(c.security_schemes.keys()),
            bearer=c.security_schemes["bearer"].http_auth_security_scheme.scheme
            if "bearer" in c.security_schemes
            else None,
        )

    blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
    streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)

    # A blocking send: one event, the task, completed.
    (await collect(blocking.send_message(ask("Say hello.")))).line("send")

    # A streamed send: the task, working, the answer in chunks, completed.
    (await collect(streaming.send_message(ask("Say more.")))).line("stream")

    # A streamed send that waits for an approval, answered "yes" with a blocking send.
    waits = await collect(streaming.send_message(ask("Remove /tmp/a.")))
    waits.line("approval_wait")
    answered = await collect(
        blocking.send_message(ask("Yes, go ahead.", task=waits.task.id, context=waits.task.context_id))
    )
    answered.line("approval_answered")
    task_line("approval_task", await blocking.get_task(GetTaskRequest(id=waits.task.id)))
    task_line(
        "approval_task_short",
        await blocking.get_task(GetTaskRequest(id=waits.task.id, history_length=1)),
    )

    # A tool's question, answered with text.
    asked = await collect(blocking.send_message(ask("Remove something.")))
    asked.line("question_wait")
    (await collect(blocking.send_message(ask("/tmp/b", task=asked.task.id)))).line("question_answered")

    # A cancel of a task that waits; a second cancel is refused.
    waiting = await collect(blocking.send_message(ask("Remove /tmp/c.")))
    waiting.line("cancel_wait")
    task_line("cancelled", await blocking.cancel_task(CancelTaskRequest(id=waiting.task.id)))
    try:
        await blocking.cancel_task(CancelTaskRequest(id=waiting.task.id))
        emit("cancel_again", error=None)
    except TaskNotCancelableError as e:
        emit("cancel_again", error=type(e).__name__)
    try:
        await blocking.send_message(ask("more", task=waiting.task.id)).__anext__()
        emit("send_to_ended", error=None)
    except UnsupportedOperationError as e:
        emit("send_to_ended", error=type(e).__name__)

    # A subscription to a task that waits, approved with a data part by another client.
    held = await collect(blocking.send_message(ask("Remove /tmp/d.")))
    subscription = streaming.subscribe(SubscribeToTaskRequest(id=held.task.id))
    watched = Collected()
    watched.take(await subscription.__anext__())
    approve = new_message(
        [new_data_part({"action": "approve"})], task_id=held.task.id, role=Role.ROLE_USER
    )
    other = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
    (await collect(other.send_message(SendMessageRequest(message=approve)))).line("subscribe_approved")
    async for event in subscription:
        watched.take(event)
    watched.line("subscribed")

    # What does not exist, and what has ended.
    try:
        await blocking.get_task(GetTaskRequest(id="no-such-task"))
        emit("unknown_task", error=None)
    except TaskNotFoundError as e:
        emit("unknown_task", error=type(e).__name__)
    try:
        async for _ in streaming.subscribe(SubscribeToTaskRequest(id=held.task.id)):
            pass
        emit("subscribe_ended", error=None)
    except UnsupportedOperationError as e:
        emit("subscribe_ended", error=type(e).__name__)

    # A wrong token: the card and a call are refused with a bare 401.
    wrong = httpx.AsyncClient(headers={"Authorization": f"Bearer not-{token}"}, timeout=30)
    try:
        await A2ACardResolver(wrong, base).get_agent_card()
        emit("wrong_token_card", status=None)
    except AgentCardResolutionError as e:
        emit("wrong_token_card", status=e.status_code)
    refused = ClientFactory(ClientConfig(httpx_client=wrong, streaming=False)).create(card)
    try:
        await refused.get_task(GetTaskRequest(id="x"))
        emit("wrong_token_call", error=None)
    except A2AClientError as e:
        emit("wrong_token_call", error=type(e).__name__, message=str(e)[:40])


async def model(base, token, agent):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
    card = await A2ACardResolver(http, base).get_agent_card(
        f"/a2a/{agent}/.well-known/agent-card.json"
    )
    emit("card", name=card.name, streaming=card.capabilities.streaming)
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
    (await collect(client.send_message(ask("What is 2 + 3? Use the add tool.")))).line("stream")


def main():
    base, token, agent, scenario = sys.argv[1:5]
    run = scripted if scenario == "scripted" else model
    asyncio.run(run(base, token, agent))


if __name__ == "__main__":
    main()
