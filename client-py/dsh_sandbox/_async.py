"""The asynchronous client: ``AsyncClient`` and its agent handles, over httpx.AsyncClient.

Mirrors _sync.py method for method (the same names, arguments and answers, awaited here), plus
terminal attachment over the terminal WebSocket (the ``websockets`` package, when installed).
Invariants: every request carries the tenant's key; an answer that is not ok raises a DshError
(errors.py) before any caller sees it; a call batch keeps one Idempotency-Key across its retries;
an event stream yields events in seq order, none twice, resuming after breaks with
Last-Event-ID; leaving an ``async for`` over a stream closes its connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Callable, Dict, Iterable, List, Mapping, Optional, Union

import httpx

from . import _common as c
from .errors import DshError, DshToolError, error_from_body
from .sse import SseParser
from .types import Agent as AgentInfo
from .types import (AgentEvent, AgentUsage, Answered, ArchiveUploaded, CreateAgentOptions, DirectoryListing, ExecResult,
                    Checkpoint, HostRequest, PauseView, RequestAnswer, RollbackView, SnapshotView,
                    TerminalInfo, Tool, ToolResult, Uploaded)
from .terminal import AsyncTerminal, connect_terminal

Progress = Callable[[AgentEvent], Any]


class _Http:
    """One httpx.AsyncClient with the key; JSON in and out, errors raised as DshError."""

    def __init__(self, base_url: str, api_key: str, transport: Optional[httpx.AsyncBaseTransport]) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        options: Dict[str, Any] = {} if transport is None else {"transport": transport}
        self.client = httpx.AsyncClient(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "dsh-sandbox-python"},
            timeout=c.JSON_TIMEOUT,
            **options,
        )

    async def json(self, method: str, path: str, *, body: Any = None, params: Optional[Mapping[str, Any]] = None,
                   headers: Optional[Mapping[str, str]] = None, timeout: Any = c.JSON_TIMEOUT) -> Any:
        response = await self.client.request(method, path, json=body, params=params, headers=headers,
                                             timeout=timeout)
        if response.is_error:
            raise error_from_body(response.status_code, response.text, response.headers.get("retry-after"))
        return response.json() if response.content else None

    async def check(self, response: httpx.Response) -> None:
        """Raises the DshError of a streamed response that is not ok (reading its body first)."""
        if response.is_error:
            await response.aread()
            raise error_from_body(response.status_code, response.text, response.headers.get("retry-after"))


class AsyncClient:
    """``async with AsyncClient(base_url, api_key) as client:`` — agents, and every route by operation."""

    def __init__(self, base_url: str, api_key: str, *, retry: Union[c.Retry, bool, None] = None,
                 transport: Optional[httpx.AsyncBaseTransport] = None) -> None:
        self._http = _Http(base_url, api_key, transport)
        self._retry = c.retry_of(retry)
        self.agents = AsyncAgents(self._http, self._retry)
        self.snapshots = AsyncSnapshots(self._http)

    async def api(self, operation_id: str, *, path: Optional[Mapping[str, str]] = None,
                  query: Optional[Mapping[str, Any]] = None, body: Any = None) -> Any:
        """Any JSON route by its operationId in /openapi.json (openapi.OPERATIONS), for what handles lack."""
        method, url = c.operation(operation_id, path)
        return await self._http.json(method, url, body=body, params=query)

    async def aclose(self) -> None:
        await self._http.client.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


class AsyncSnapshots:
    """The tenant's workspace snapshots (of agents deleted since too): listed, read and deleted."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    async def list(self) -> List[SnapshotView]:
        """The tenant's snapshots, oldest first."""
        return (await self._http.json("GET", "/v1/snapshots"))["snapshots"]

    async def get(self, snapshot_id: str) -> SnapshotView:
        """Snapshot ``snapshot_id``; DshError NOT_FOUND when the tenant has none of that id."""
        return await self._http.json("GET", c.path_of("/v1/snapshots/{id}", id=snapshot_id))

    async def delete(self, snapshot_id: str) -> None:
        """Deletes the snapshot (agents made from it keep their copies)."""
        await self._http.json("DELETE", c.path_of("/v1/snapshots/{id}", id=snapshot_id))


class AsyncAgents:
    def __init__(self, http: _Http, retry: c.Retry) -> None:
        self._http, self._retry = http, retry

    async def create(self, options: Optional[CreateAgentOptions] = None, *, from_snapshot: Optional[str] = None,
                     **fields: Any) -> "AsyncAgent":
        """Creates an agent (CreateAgentBody: preset, mode, policy, sandbox limits, …; its sandbox starts on first use).

        ``from_snapshot``: a snapshot's id (``agent.snapshot()``); the agent starts with a copy of that workspace.
        """
        body = {**(options or {}), **fields, **({} if from_snapshot is None else {"fromSnapshot": from_snapshot})}
        return self._handle(await self._http.json("POST", "/v1/agents", body=body))

    async def get(self, agent_id: str) -> "AsyncAgent":
        """The tenant's agent; DshError NOT_FOUND when there is none (another tenant's too)."""
        return self._handle(await self._http.json("GET", c.path_of("/v1/agents/{id}", id=agent_id)))

    async def list(self) -> List["AsyncAgent"]:
        return [self._handle(info) for info in (await self._http.json("GET", "/v1/agents"))["agents"]]

    async def delete(self, agent_id: str) -> None:
        """Deletes the agent, its sandbox and its children."""
        await self._http.json("DELETE", c.path_of("/v1/agents/{id}", id=agent_id))

    def _handle(self, info: AgentInfo) -> "AsyncAgent":
        return AsyncAgent(self._http, self._retry, info)


class AsyncAgent:
    """One agent: calls and batches, files, exec, events, host requests, terminals, usage, pause."""

    def __init__(self, http: _Http, retry: c.Retry, info: AgentInfo) -> None:
        self._http, self._retry = http, retry
        self.id: str = info["id"]
        self.info = info
        self._path = c.path_of("/v1/agents/{id}", id=self.id)
        self.files = AsyncFiles(http, self._path)
        self.requests = AsyncRequests(http, self._path)
        self.terminals = AsyncTerminals(http, self.id, self._path)

    async def exec(self, command: str, *, cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                   timeout_ms: Optional[int] = None, stdin: Optional[str] = None) -> ExecResult:
        """Runs ``bash -c command`` in the sandbox as the agent: exit code and output (a failing one too)."""
        return await self._http.json("POST", f"{self._path}/exec", body=c.exec_body(command, cwd, env, timeout_ms, stdin),
                                     timeout=c.exec_timeout(timeout_ms))

    async def tools(self) -> List[Tool]:
        """The tools the agent's model sees, exactly."""
        return (await self._http.json("GET", f"{self._path}/tools"))["tools"]

    async def call(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, step: Optional[str] = None,
                   on_progress: Optional[Progress] = None, idempotency_key: Optional[str] = None) -> ToolResult:
        """Runs one tool call; a call that ran and failed raises DshToolError with its stable code."""
        results = await self.batch([{"name": name, "arguments": dict(arguments or {})}], step=step,
                                   on_progress=on_progress, idempotency_key=idempotency_key)
        if not results:
            raise DshError("INTERNAL", "The service answered a call with no result.")
        if not results[0].get("ok"):
            raise DshToolError(results[0])
        return results[0]

    async def batch(self, calls: Iterable[Mapping[str, Any]], *, step: Optional[str] = None,
                    on_progress: Optional[Progress] = None, idempotency_key: Optional[str] = None) -> List[ToolResult]:
        """Runs calls as one batch and returns every result in call order (failed ones: ``ok`` False).

        ``on_progress`` is told each event of the batch as it happens. The batch's Idempotency-Key
        (default: a new one) makes the retries (see Retry) run it once however often it is sent.
        """
        body = c.batch_body(calls, step)
        key = idempotency_key or c.new_key()
        for attempt in range(1, self._retry.attempts + 1):
            try:
                if on_progress is None:
                    answer = await self._http.json("POST", f"{self._path}/calls", body=body,
                                                   headers={"Idempotency-Key": key}, timeout=c.CALL_TIMEOUT)
                    return answer["results"]
                return await self._stream(body, key, on_progress)
            except (DshError, httpx.TransportError) as error:
                delay = c.retry_delay(error, attempt - 1, self._retry) if attempt < self._retry.attempts else None
                if delay is None:
                    raise
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _stream(self, body: Any, key: str, on_progress: Progress) -> List[ToolResult]:
        headers = {"Accept": "text/event-stream", "Idempotency-Key": key}
        async with self._http.client.stream("POST", f"{self._path}/calls", json=body, headers=headers,
                                            timeout=c.CALL_TIMEOUT) as response:
            await self._http.check(response)
            parser = SseParser()
            async for text in response.aiter_text():
                for message in parser.feed(text):
                    if message.event == "progress":
                        outcome = on_progress(json.loads(message.data))
                        if asyncio.iscoroutine(outcome):
                            await outcome
                    elif message.event == "results":
                        return json.loads(message.data)["results"]
                    elif message.event == "error":
                        raise _stream_error(message.data)
        raise c.StreamCut()

    async def events(self, *, after: int = 0, reconnect: bool = True, retry_s: float = 0.25) -> AsyncIterator[AgentEvent]:
        """The agent's events after seq ``after``, then live ones, resumed after breaks (Last-Event-ID).

        Ends when the agent is deleted; leaving the ``async for`` closes the connection.
        """
        last, wait = after, retry_s
        while True:
            try:
                headers = {"Accept": "text/event-stream", "Last-Event-ID": str(last)}
                async with self._http.client.stream("GET", f"{self._path}/events", headers=headers,
                                                    timeout=c.STREAM_TIMEOUT) as response:
                    await self._http.check(response)
                    parser = SseParser()
                    async for text in response.aiter_text():
                        for message in parser.feed(text):
                            if message.event == "event":
                                event = json.loads(message.data)
                                wait = retry_s
                                if event["seq"] > last:
                                    last = event["seq"]
                                    yield event
                            elif message.event == "deleted":
                                return
                            elif message.event == "shutdown":
                                raise _Reconnect()
            except _Reconnect:
                pass
            except (DshError, httpx.TransportError) as error:
                retryable = not isinstance(error, DshError) or error.status in c.RECONNECT_STATUSES
                if not retryable or not reconnect:
                    raise
            if not reconnect:
                return
            await asyncio.sleep(wait)
            wait = min(wait * 2, c.MAX_RECONNECT_S)

    async def usage(self) -> AgentUsage:
        """State (sandbox, batches running, last call) and usage (log, disk, memory, CPU); never starts the sandbox."""
        return await self._http.json("GET", f"{self._path}/usage")

    async def pause(self, mode: str = "stop") -> PauseView:
        """Pauses the agent (``stop``: nothing held; ``freeze``: processes kept); its next call resumes it."""
        return await self._http.json("POST", f"{self._path}/pause", body={"mode": mode})

    async def resume(self) -> PauseView:
        return await self._http.json("POST", f"{self._path}/resume")

    async def checkpoints(self) -> List[Checkpoint]:
        """The agent's checkpoints, oldest first: one per tracked file call (write, edit, str_replace_editor,
        skill loads, file and archive uploads) and per ``checkpoint`` mark."""
        return (await self._http.json("GET", f"{self._path}/checkpoints"))["checkpoints"]

    async def rollback(self, call_id: Optional[str] = None, *, seq: Optional[int] = None) -> RollbackView:
        """Restores the files the tracked calls changed to what they were just before call ``call_id`` (or the
        checkpoint ``seq``, which names one call where ids repeat, as this client's ``c1``… do across batches).

        Refused with nothing changed (DshError): CHECKPOINT_NOT_FOUND, CHECKPOINT_DROPPED, ROLLBACK_UNSAFE
        (bash or anything untracked changed one of the files since), ROLLBACK_BUSY (a batch still runs).
        """
        return await self._http.json("POST", f"{self._path}/rollback", body=c.rollback_body(call_id, seq))

    async def snapshot(self) -> SnapshotView:
        """Takes a snapshot of the agent's workspace (consistent: its writes wait while it is copied);
        ``client.agents.create(from_snapshot=snapshot["id"])`` makes an agent from it."""
        return await self._http.json("POST", f"{self._path}/snapshots")

    async def snapshots(self) -> List[SnapshotView]:
        """The agent's snapshots, oldest first."""
        return (await self._http.json("GET", f"{self._path}/snapshots"))["snapshots"]

    async def delete(self) -> None:
        await self._http.json("DELETE", self._path)


def _stream_error(data: str) -> DshError:
    """The DshError of a stream's `error` event (the service's ErrorBody)."""
    body = json.loads(data)
    error = body.get("error", {}) if isinstance(body, dict) else {}
    return DshError(error.get("code", "INTERNAL"), error.get("message", data), data=error.get("data"), body=body)


class _Reconnect(Exception):
    """The service said `shutdown`: resume on the next connection."""


class AsyncFiles:
    """The agent's workspace files; paths are relative to the workspace (others: PATH_OUTSIDE_WORKSPACE)."""

    def __init__(self, http: _Http, agent_path: str) -> None:
        self._http, self._path = http, agent_path

    async def write(self, path: str, content: Union[str, bytes]) -> Uploaded:
        """Creates or replaces the file; it changes only once all of it arrived."""
        data = content.encode() if isinstance(content, str) else content
        return await self._put("files", path, data, "application/octet-stream")

    async def read(self, path: str) -> bytes:
        response = await self._http.client.get(f"{self._path}/files", params={"path": path})
        await self._http.check(response)
        return response.content

    async def read_text(self, path: str) -> str:
        return (await self.read(path)).decode()

    async def upload(self, path: str, local: str) -> Uploaded:
        """Uploads the local file ``local`` to ``path``, streamed in chunks."""
        return await self._put("files", path, _chunks_of(local), "application/octet-stream")

    async def download(self, path: str, local: str) -> int:
        """Downloads ``path`` into the local file ``local``, streamed; returns the bytes written."""
        return await self._save("files", path, local)

    async def upload_archive(self, path: str, tar: Union[bytes, str]) -> ArchiveUploaded:
        """Extracts an uncompressed tar (bytes, or a local file's name) into directory ``path``."""
        content = tar if isinstance(tar, bytes) else _chunks_of(tar)
        return await self._put("archive", path, content, "application/x-tar")

    async def download_archive(self, path: str, local: str) -> int:
        """The file or directory ``path`` as an uncompressed tar, saved to ``local``."""
        return await self._save("archive", path, local)

    async def list(self, path: str = ".") -> DirectoryListing:
        """The entries of directory ``path``, sorted by name, at most 1,000 (``truncated`` says when more)."""
        return await self._http.json("GET", f"{self._path}/directory", params={"path": path})

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file, symlink or empty directory; a directory with contents only with ``recursive``."""
        params = {"path": path, **({"recursive": "true"} if recursive else {})}
        await self._http.json("DELETE", f"{self._path}/files", params=params)

    async def _put(self, route: str, path: str, content: Any, kind: str) -> Any:
        response = await self._http.client.put(f"{self._path}/{route}", params={"path": path}, content=content,
                                               headers={"Content-Type": kind}, timeout=c.CALL_TIMEOUT)
        await self._http.check(response)
        return response.json()

    async def _save(self, route: str, path: str, local: str) -> int:
        written = 0
        async with self._http.client.stream("GET", f"{self._path}/{route}", params={"path": path},
                                            timeout=c.STREAM_TIMEOUT) as response:
            await self._http.check(response)
            with open(local, "wb") as out:
                async for chunk in response.aiter_bytes():
                    out.write(chunk)
                    written += len(chunk)
        return written


async def _chunks_of(local: str, size: int = 256 * 1024) -> AsyncIterator[bytes]:
    with open(local, "rb") as source:
        while chunk := source.read(size):
            yield chunk


class AsyncRequests:
    """The agent's host requests (approvals, remote tools, subagents, user questions, …), listed and answered."""

    def __init__(self, http: _Http, agent_path: str) -> None:
        self._http, self._path = http, agent_path

    async def list(self, state: Optional[str] = None) -> List[HostRequest]:
        answer = await self._http.json("GET", f"{self._path}/requests", params=c.compact({"state": state}))
        return answer["requests"]

    async def get(self, request_id: str) -> HostRequest:
        return await self._http.json("GET", f"{self._path}/requests/{c.path_of('{r}', r=request_id)}")

    async def answer(self, request_id: str, answer: RequestAnswer) -> Answered:
        """Answers a pending request (``{"allow": True}`` for an approval; the kind decides the shape)."""
        return await self._http.json("POST", f"{self._path}/requests/{c.path_of('{r}', r=request_id)}", body=dict(answer))


class AsyncTerminals:
    """The agent's terminals (PTYs in its sandbox): open, list, close, and attach to one."""

    def __init__(self, http: _Http, agent_id: str, agent_path: str) -> None:
        self._http, self._agent_id, self._path = http, agent_id, agent_path

    async def open(self, *, command: Optional[List[str]] = None, cols: Optional[int] = None, rows: Optional[int] = None,
                   cwd: Optional[str] = None, name: Optional[str] = None) -> TerminalInfo:
        """Opens a terminal running ``command`` (default ``["bash"]``)."""
        body = c.compact({"command": command, "cols": cols, "rows": rows, "cwd": cwd, "name": name})
        return await self._http.json("POST", f"{self._path}/terminals", body=body)

    async def list(self) -> List[TerminalInfo]:
        return (await self._http.json("GET", f"{self._path}/terminals"))["terminals"]

    async def close(self, terminal_id: str) -> None:
        await self._http.json("DELETE", f"{self._path}/terminals/{c.path_of('{t}', t=terminal_id)}")

    async def attach(self, terminal_id: str, *, offset: Optional[int] = None) -> AsyncTerminal:
        """Attaches to the terminal over its WebSocket (needs the ``websockets`` package)."""
        url = c.websocket_url(self._http.base_url, self._agent_id, terminal_id, offset)

        async def why_refused() -> DshError:
            try:
                await self._http.json("GET", self._path)
            except DshError as error:
                return error
            return DshError("NOT_FOUND", f"The terminal {terminal_id!r} refused the connection: no such terminal, "
                                         "or the tenant has its most terminal sockets open.")

        return await connect_terminal(url, self._http.api_key, why_refused)
