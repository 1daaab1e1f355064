"""What the sync and the async client share: paths, request bodies, timeouts and retry rules.

Pure (no I/O), so Client and AsyncClient behave alike by construction. Retrying a call batch is
safe because every batch carries an Idempotency-Key: the service runs a key's batch at most once
and answers a retry with the first answer. Retried: a failure to reach the service or a connection
cut before the answer (httpx.TransportError), a call stream that ended before its results, 502,
503, 429 with Retry-After and 409 IDEMPOTENCY_KEY_IN_PROGRESS (the batch still runs on another
replica). Nothing else: any other 4xx, or a 500, is the answer.
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union
from urllib.parse import quote

import httpx

from .errors import DshError
from .openapi import OPERATIONS

# Read timeouts: a JSON route answers within a minute; an event stream gets a `: ping` every 15 s
# (a silent minute means a dead connection, and the stream resumes); a call batch is bounded by
# its tools' own timeouts on the service, so the client waits for it.
JSON_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
STREAM_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
CALL_TIMEOUT = httpx.Timeout(None, connect=10.0)
MAX_RECONNECT_S = 5.0
# Statuses of a service that is restarting or overloaded: an event stream tries again.
RECONNECT_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class Retry:
    """How call batches are retried with their Idempotency-Key. ``attempts=1`` never retries."""

    attempts: int = 4
    base_delay_s: float = 0.25
    max_delay_s: float = 5.0


class StreamCut(DshError):
    """A call stream that ended before its results: the batch may have run, a retry tells."""

    def __init__(self) -> None:
        super().__init__("SANDBOX_UNAVAILABLE", "The call stream ended before its results; the batch may have run.")


def retry_of(retry: Union[Retry, bool, None]) -> Retry:
    if retry is False:
        return Retry(attempts=1)
    return retry if isinstance(retry, Retry) else Retry()


def retry_delay(error: BaseException, retry: int, options: Retry) -> Optional[float]:
    """Seconds to wait before retrying after ``error`` (the ``retry``-th retry), or None: not retried."""

    def backoff() -> float:
        full = min(options.max_delay_s, options.base_delay_s * 2**retry)
        return full / 2 + random.random() * (full / 2)

    def after(e: DshError) -> float:
        return backoff() if e.retry_after_s is None else min(options.max_delay_s, e.retry_after_s)

    if isinstance(error, StreamCut):
        return backoff()
    if isinstance(error, DshError):
        if error.status in (502, 503) or error.code == "IDEMPOTENCY_KEY_IN_PROGRESS":
            return after(error)
        if error.status == 429 and error.retry_after_s is not None:
            return after(error)
        return None
    return backoff() if isinstance(error, httpx.TransportError) else None


def path_of(template: str, **values: str) -> str:
    """``template`` with each ``{name}`` replaced by its percent-encoded value."""

    def one(match: "re.Match[str]") -> str:
        name = match.group(1)
        if name not in values:
            raise DshError("BAD_REQUEST", f"No value for {{{name}}} in {template}.")
        return quote(str(values[name]), safe="")

    return re.sub(r"\{(\w+)\}", one, template)


def operation(operation_id: str, path: Optional[Mapping[str, str]]) -> "tuple[str, str]":
    """The method and the filled-in path of an operation of /openapi.json."""
    if operation_id not in OPERATIONS:
        raise DshError("BAD_REQUEST", f"No operation {operation_id!r} in the API.")
    method, template = OPERATIONS[operation_id]
    return method, path_of(template, **dict(path or {}))


def batch_body(calls: Iterable[Mapping[str, Any]], step: Optional[str]) -> Dict[str, Any]:
    """The body of POST /calls: calls without an id are numbered c1, c2, … in order."""
    numbered: List[Dict[str, Any]] = []
    for i, call in enumerate(calls):
        numbered.append({**call, "id": call.get("id") or f"c{i + 1}", "arguments": call.get("arguments") or {}})
    body: Dict[str, Any] = {"calls": numbered}
    if step is not None:
        body["step"] = step
    return body


def rollback_body(call_id: Optional[str], seq: Optional[int]) -> Dict[str, Any]:
    """The body of POST /rollback: a call id or a checkpoint's seq, exactly one of them."""
    if (call_id is None) == (seq is None):
        raise ValueError("rollback takes a call id or seq=, one of them")
    return {"callId": call_id} if call_id is not None else {"seq": seq}


def new_key() -> str:
    return str(uuid.uuid4())


def exec_body(command: str, cwd: Optional[str], env: Optional[Mapping[str, str]], timeout_ms: Optional[int],
              stdin: Optional[str]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"command": command}
    for key, value in (("cwd", cwd), ("env", dict(env) if env is not None else None), ("timeoutMs", timeout_ms),
                       ("stdin", stdin)):
        if value is not None:
            body[key] = value
    return body


def exec_timeout(timeout_ms: Optional[int]) -> httpx.Timeout:
    """The read timeout of an exec: the command's own (default 120 s) and a margin."""
    return httpx.Timeout((timeout_ms or 120_000) / 1000 + 30.0, connect=10.0)


def compact(values: Mapping[str, Any]) -> Dict[str, Any]:
    """``values`` without the keys set to None (optional arguments not given)."""
    return {key: value for key, value in values.items() if value is not None}


def text_of(result: Mapping[str, Any]) -> str:
    """The text of a result's content (its text parts, joined by newlines)."""
    parts = [part.get("text", "") for part in result.get("content", []) if part.get("type") == "text"]
    return "\n".join(text for text in parts if text)


def websocket_url(base_url: str, agent_id: str, terminal_id: str, offset: Optional[int]) -> str:
    url = base_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
    url += path_of("/v1/agents/{id}/terminals/{tid}", id=agent_id, tid=terminal_id)
    return url if offset is None else f"{url}?offset={int(offset)}"
