"""Talks to motet's OpenAI-compatible endpoint with the official `openai` package and prints
what it got, one JSON object a line, for serve/tests/openai_python.rs to check.

    python openai_client.py BASE_URL TOKEN MODEL PROMPT

It lists the models, asks PROMPT once whole and once streamed (with the usage chunk), and makes
two requests the endpoint must refuse: a wrong key and an unknown model. Nothing is retried, so
every request the server sees is one this script made.
"""

import json
import sys

import openai


def emit(what, **fields):
    print(json.dumps({"what": what, **fields}), flush=True)


def main():
    base, token, model, prompt = sys.argv[1:5]
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0, timeout=600)
    ask = [{"role": "user", "content": prompt}]

    emit("models", ids=[m.id for m in client.models.list()])
    emit("model", id=client.models.retrieve(model).id)

    whole = client.chat.completions.create(model=model, messages=ask)
    choice = whole.choices[0]
    emit(
        "completion",
        id=whole.id,
        object=whole.object,
        model=whole.model,
        role=choice.message.role,
        content=choice.message.content,
        finish=choice.finish_reason,
        tool_calls=choice.message.tool_calls,
        usage=whole.usage.model_dump() if whole.usage else None,
        motet=(whole.model_extra or {}).get("motet"),
    )

    stream = client.chat.completions.create(
        model=model, messages=ask, stream=True, stream_options={"include_usage": True}
    )
    ids, roles, texts, finishes, usage, tool_calls, chunks = set(), [], [], [], None, 0, 0
    for chunk in stream:
        chunks += 1
        ids.add(chunk.id)
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        for c in chunk.choices:
            if c.delta.role:
                roles.append(c.delta.role)
            if c.delta.content:
                texts.append(c.delta.content)
            if c.delta.tool_calls:
                tool_calls += 1
            if c.finish_reason:
                finishes.append(c.finish_reason)
    emit(
        "stream",
        ids=sorted(ids),
        chunks=chunks,
        roles=roles,
        content="".join(texts),
        finishes=finishes,
        tool_calls=tool_calls,
        usage=usage,
    )

    wrong = openai.OpenAI(base_url=f"{base}/v1", api_key="not-" + token, max_retries=0)
    try:
        wrong.models.list()
        emit("wrong_key", error=None)
    except openai.AuthenticationError as e:
        emit("wrong_key", error=type(e).__name__, status=e.status_code)

    try:
        client.chat.completions.create(model="no-such-agent", messages=ask)
        emit("unknown_model", error=None)
    except openai.NotFoundError as e:
        emit("unknown_model", error=type(e).__name__, status=e.status_code, code=e.code)


if __name__ == "__main__":
    main()
