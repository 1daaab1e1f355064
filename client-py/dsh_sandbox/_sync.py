"""The synchronous client: ``Client`` and its agent handles, over httpx.Client.

Written from _async.py by replacing its awaits (the same names, arguments and answers), so the two
behave alike; keep them so when changing either (tests/test_parity.py checks the methods). A
terminal is attached on an event loop of its own (terminal.Terminal): Debian's websockets 10 has
no synchronous client. Invariants: every request carries the tenant's
key; an answer that is not ok raises a DshError (errors.py) before any caller sees it; a call batch
keeps one Idempotency-Key across its retries; an event stream yields events in seq order, none
twice, resuming after breaks with Last-Event-ID; leaving a ``for`` over a stream (break, or closing
the generator) closes its connection.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator, Callable, Dict, Iterable, List, Mapping, Optional, Union

import httpx

from . import _common as c
from .errors import DshError, DshToolError, error_from_body
from .sse import SseParser
from .types import Agent as AgentInfo
from .types import (AgentEvent, AgentUsage, Answered, ArchiveUploaded, CreateAgentOptions, DirectoryListing, ExecResult,
                    Checkpoint, HostRequest, PauseView, RequestAnswer, RollbackView, SnapshotView,
                    TerminalInfo, Tool, ToolResult, Uploaded)
from .terminal import Terminal

Progress = Callable[[AgentEvent], Any]


class _Http:
    """One httpx.Client with the key; JSON in and out, errors raised as DshError."""

    def __init__(self, base_url: str, api_key: str, transport: Optional[httpx.BaseTransport]) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        options: Dict[str, Any] = {} if transport is None else {"transport": transport}
        self.client = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "dsh-sandbox-python"},
            timeout=c.JSON_TIMEOUT,
            **options,
        )

    def json(self, method: str, path: str, *, body: Any = None, params: Optional[Mapping[str, Any]] = None,
                   headers: Optional[Mapping[str, str]] = None, timeout: Any = c.JSON_TIMEOUT) -> Any:
        response = self.client.request(method, path, json=body, params=params, headers=headers,
                                             timeout=timeout)
        if response.is_error:
            raise error_from_body(response.status_code, response.text, response.headers.get("retry-after"))
        return response.json() if response.content else None

    def check(self, response: httpx.Response) -> None:
        """Raises the DshError of a streamed response that is not ok (reading its body first)."""
        if response.is_error:
            response.read()
            raise error_from_body(response.status_code, response.text, response.headers.get("retry-after"))


class Client:
    """``with Client(base_url, api_key) as client:`` — agents, and every route by operation."""

    def __init__(self, base_url: str, api_key: str, *, retry: Union[c.Retry, bool, None] = None,
                 transport: Optional[httpx.BaseTransport] = None) -> None:
        self._http = _Http(base_url, api_key, transport)
        self._retry = c.retry_of(retry)
        self.agents = Agents(self._http, self._retry)
        self.snapshots = Snapshots(self._http)

    def api(self, operation_id: str, *, path: Optional[Mapping[str, str]] = None,
                  query: Optional[Mapping[str, Any]] = None, body: Any = None) -> Any:
        """Any JSON route by its operationId in /openapi.json (openapi.OPERATIONS), for what handles lack."""
        method, url = c.operation(operation_id, path)
        return self._http.json(method, url, body=body, params=query)

    def close(self) -> None:
        self._http.client.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Snapshots:
    """The tenant's workspace snapshots (of agents deleted since too): listed, read and deleted."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def list(self) -> List[SnapshotView]:
        """The tenant's snapshots, oldest first."""
        return (self._http.json("GET", "/v1/snapshots"))["snapshots"]

    def get(self, snapshot_id: str) -> SnapshotView:
        """Snapshot ``snapshot_id``; DshError NOT_FOUND when the tenant has none of that id."""
        return self._http.json("GET", c.path_of("/v1/snapshots/{id}", id=snapshot_id))

    def delete(self, snapshot_id: str) -> None:
        """Deletes the snapshot (agents made from it keep their copies)."""
        self._http.json("DELETE", c.path_of("/v1/snapshots/{id}", id=snapshot_id))


class Agents:
    def __init__(self, http: _Http, retry: c.Retry) -> None:
        self._http, self._retry = http, retry

    def create(self, options: Optional[CreateAgentOptions] = None, *, from_snapshot: Optional[str] = None,
                     **fields: Any) -> "Agent":
        """Creates an agent (CreateAgentBody: preset, mode, policy, sandbox limits, …; its sandbox starts on first use).

        ``from_snapshot``: a snapshot's id (``agent.snapshot()``); the agent starts with a copy of that workspace.
        """
        body = {**(options or {}), **fields, **({} if from_snapshot is None else {"fromSnapshot": from_snapshot})}
        return self._handle(self._http.json("POST", "/v1/agents", body=body))

    def get(self, agent_id: str) -> "Agent":
        """The tenant's agent; DshError NOT_FOUND when there is none (another tenant's too)."""
        return self._handle(self._http.json("GET", c.path_of("/v1/agents/{id}", id=agent_id)))

    def list(self) -> List["Agent"]:
        return [self._handle(info) for info in (self._http.json("GET", "/v1/agents"))["agents"]]

    def delete(self, agent_id: str) -> None:
        """Deletes the agent, its sandbox and its children."""
        self._http.json("DELETE", c.path_of("/v1/agents/{id}", id=agent_id))

    def _handle(self, info: AgentInfo) -> "Agent":
        return Agent(self._http, self._retry, info)


class Agent:
    """One agent: calls and batches, files, exec, events, host requests, terminals, usage, pause."""

    def __init__(self, http: _Http, retry: c.Retry, info: AgentInfo) -> None:
        self._http, self._retry = http, retry
        self.id: str = info["id"]
        self.info = info
        self._path = c.path_of("/v1/agents/{id}", id=self.id)
        self.files = Files(http, self._path)
        self.requests = Requests(http, self._path)
        self.terminals = Terminals(http, self.id, self._path)

    def exec(self, command: str, *, cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                   timeout_ms: Optional[int] = None, stdin: Optional[str] = None) -> ExecResult:
        """Runs ``bash -c command`` in the sandbox as the agent: exit code and output (a failing one too)."""
        return self._http.json("POST", f"{self._path}/exec", body=c.exec_body(command, cwd, env, timeout_ms, stdin),
                                     timeout=c.exec_timeout(timeout_ms))

    def tools(self) -> List[Tool]:
        """The tools the agent's model sees, exactly."""
        return (self._http.json("GET", f"{self._path}/tools"))["tools"]

    def call(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, step: Optional[str] = None,
                   on_progress: Optional[Progress] = None, idempotency_key: Optional[str] = None) -> ToolResult:
        """Runs one tool call; a call that ran and failed raises DshToolError with its stable code."""
        results = self.batch([{"name": name, "arguments": dict(arguments or {})}], step=step,
                                   on_progress=on_progress, idempotency_key=idempotency_key)
        if not results:
            raise DshError("INTERNAL", "The service answered a call with no result.")
        if not results[0].get("ok"):
            raise DshToolError(results[0])
        return results[0]

    def batch(self, calls: Iterable[Mapping[str, Any]], *, step: Optional[str] = None,
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
                    answer = self._http.json("POST", f"{self._path}/calls", body=body,
                                                   headers={"Idempotency-Key": key}, timeout=c.CALL_TIMEOUT)
                    return answer["results"]
                return self._stream(body, key, on_progress)
            except (DshError, httpx.TransportError) as error:
                delay = c.retry_delay(error, attempt - 1, self._retry) if attempt < self._retry.attempts else None
                if delay is None:
                    raise
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _stream(self, body: Any, key: str, on_progress: Progress) -> List[ToolResult]:
        headers = {"Accept": "text/event-stream", "Idempotency-Key": key}
        with self._http.client.stream("POST", f"{self._path}/calls", json=body, headers=headers,
                                            timeout=c.CALL_TIMEOUT) as response:
            self._http.check(response)
            parser = SseParser()
            for text in response.iter_text():
                for message in parser.feed(text):
                    if message.event == "progress":
                        on_progress(json.loads(message.data))
                    elif message.event == "results":
                        return json.loads(message.data)["results"]
                    elif message.event == "error":
                        raise _stream_error(message.data)
        raise c.StreamCut()

    def events(self, *, after: int = 0, reconnect: bool = True, retry_s: float = 0.25) -> Iterator[AgentEvent]:
        """The agent's events after seq ``after``, then live ones, resumed after breaks (Last-Event-ID).

        Ends when the agent is deleted; leaving the ``for`` closes the connection.
        """
        last, wait = after, retry_s
        while True:
            try:
                headers = {"Accept": "text/event-stream", "Last-Event-ID": str(last)}
                with self._http.client.stream("GET", f"{self._path}/events", headers=headers,
                                                    timeout=c.STREAM_TIMEOUT) as response:
                    self._http.check(response)
                    parser = SseParser()
                    for text in response.iter_text():
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
            time.sleep(wait)
            wait = min(wait * 2, c.MAX_RECONNECT_S)

    def usage(self) -> AgentUsage:
        """State (sandbox, batches running, last call) and usage (log, disk, memory, CPU); never starts the sandbox."""
        return self._http.json("GET", f"{self._path}/usage")

    def pause(self, mode: str = "stop") -> PauseView:
        """Pauses the agent (``stop``: nothing held; ``freeze``: processes kept); its next call resumes it."""
        return self._http.json("POST", f"{self._path}/pause", body={"mode": mode})

    def resume(self) -> PauseView:
        return self._http.json("POST", f"{self._path}/resume")

    def checkpoints(self) -> List[Checkpoint]:
        """The agent's checkpoints, oldest first: one per tracked file call (write, edit, str_replace_editor,
        skill loads, file and archive uploads) and per ``checkpoint`` mark."""
        return (self._http.json("GET", f"{self._path}/checkpoints"))["checkpoints"]

    def rollback(self, call_id: Optional[str] = None, *, seq: Optional[int] = None) -> RollbackView:
        """Restores the files the tracked calls changed to what they were just before call ``call_id`` (or the
        checkpoint ``seq``, which names one call where ids repeat, as this client's ``c1``… do across batches).

        Refused with nothing changed (DshError): CHECKPOINT_NOT_FOUND, CHECKPOINT_DROPPED, ROLLBACK_UNSAFE
        (bash or anything untracked changed one of the files since), ROLLBACK_BUSY (a batch still runs).
        """
        return self._http.json("POST", f"{self._path}/rollback", body=c.rollback_body(call_id, seq))

    def snapshot(self) -> SnapshotView:
        """Takes a snapshot of the agent's workspace (consistent: its writes wait while it is copied);
        ``client.agents.create(from_snapshot=snapshot["id"])`` makes an agent from it."""
        return self._http.json("POST", f"{self._path}/snapshots")

    def snapshots(self) -> List[SnapshotView]:
        """The agent's snapshots, oldest first."""
        return (self._http.json("GET", f"{self._path}/snapshots"))["snapshots"]

    def delete(self) -> None:
        self._http.json("DELETE", self._path)


def _stream_error(data: str) -> DshError:
    """The DshError of a stream's `error` event (the service's ErrorBody)."""
    body = json.loads(data)
    error = body.get("error", {}) if isinstance(body, dict) else {}
    return DshError(error.get("code", "INTERNAL"), error.get("message", data), data=error.get("data"), body=body)


class _Reconnect(Exception):
    """The service said `shutdown`: resume on the next connection."""


class Files:
    """The agent's workspace files; paths are relative to the workspace (others: PATH_OUTSIDE_WORKSPACE)."""

    def __init__(self, http: _Http, agent_path: str) -> None:
        self._http, self._path = http, agent_path

    def write(self, path: str, content: Union[str, bytes]) -> Uploaded:
        """Creates or replaces the file; it changes only once all of it arrived."""
        data = content.encode() if isinstance(content, str) else content
        return self._put("files", path, data, "application/octet-stream")

    def read(self, path: str) -> bytes:
        response = self._http.client.get(f"{self._path}/files", params={"path": path})
        self._http.check(response)
        return response.content

    def read_text(self, path: str) -> str:
        return (self.read(path)).decode()

    def upload(self, path: str, local: str) -> Uploaded:
        """Uploads the local file ``local`` to ``path``, streamed in chunks."""
        return self._put("files", path, _chunks_of(local), "application/octet-stream")

    def download(self, path: str, local: str) -> int:
        """Downloads ``path`` into the local file ``local``, streamed; returns the bytes written."""
        return self._save("files", path, local)

    def upload_archive(self, path: str, tar: Union[bytes, str]) -> ArchiveUploaded:
        """Extracts an uncompressed tar (bytes, or a local file's name) into directory ``path``."""
        content = tar if isinstance(tar, bytes) else _chunks_of(tar)
        return self._put("archive", path, content, "application/x-tar")

    def download_archive(self, path: str, local: str) -> int:
        """The file or directory ``path`` as an uncompressed tar, saved to ``local``."""
        return self._save("archive", path, local)

    def list(self, path: str = ".") -> DirectoryListing:
        """The entries of directory ``path``, sorted by name, at most 1,000 (``truncated`` says when more)."""
        return self._http.json("GET", f"{self._path}/directory", params={"path": path})

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file, symlink or empty directory; a directory with contents only with ``recursive``."""
        params = {"path": path, **({"recursive": "true"} if recursive else {})}
        self._http.json("DELETE", f"{self._path}/files", params=params)

    def _put(self, route: str, path: str, content: Any, kind: str) -> Any:
        response = self._http.client.put(f"{self._path}/{route}", params={"path": path}, content=content,
                                               headers={"Content-Type": kind}, timeout=c.CALL_TIMEOUT)
        self._http.check(response)
        return response.json()

    def _save(self, route: str, path: str, local: str) -> int:
        written = 0
        with self._http.client.stream("GET", f"{self._path}/{route}", params={"path": path},
                                            timeout=c.STREAM_TIMEOUT) as response:
            self._http.check(response)
            with open(local, "wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
                    written += len(chunk)
        return written


def _chunks_of(local: str, size: int = 256 * 1024) -> Iterator[bytes]:
    with open(local, "rb") as source:
        while chunk := source.read(size):
            yield chunk


class Requests:
    """The agent's host requests (approvals, remote tools, subagents, user questions, …), listed and answered."""

    def __init__(self, http: _Http, agent_path: str) -> None:
        self._http, self._path = http, agent_path

    def list(self, state: Optional[str] = None) -> List[HostRequest]:
        answer = self._http.json("GET", f"{self._path}/requests", params=c.compact({"state": state}))
        return answer["requests"]

    def get(self, request_id: str) -> HostRequest:
        return self._http.json("GET", f"{self._path}/requests/{c.path_of('{r}', r=request_id)}")

    def answer(self, request_id: str, answer: RequestAnswer) -> Answered:
        """Answers a pending request (``{"allow": True}`` for an approval; the kind decides the shape)."""
        return self._http.json("POST", f"{self._path}/requests/{c.path_of('{r}', r=request_id)}", body=dict(answer))


class Terminals:
    """The agent's terminals (PTYs in its sandbox): open, list, close, and attach to one."""

    def __init__(self, http: _Http, agent_id: str, agent_path: str) -> None:
        self._http, self._agent_id, self._path = http, agent_id, agent_path

    def open(self, *, command: Optional[List[str]] = None, cols: Optional[int] = None, rows: Optional[int] = None,
                   cwd: Optional[str] = None, name: Optional[str] = None) -> TerminalInfo:
        """Opens a terminal running ``command`` (default ``["bash"]``)."""
        body = c.compact({"command": command, "cols": cols, "rows": rows, "cwd": cwd, "name": name})
        return self._http.json("POST", f"{self._path}/terminals", body=body)

    def list(self) -> List[TerminalInfo]:
        return (self._http.json("GET", f"{self._path}/terminals"))["terminals"]

    def close(self, terminal_id: str) -> None:
        self._http.json("DELETE", f"{self._path}/terminals/{c.path_of('{t}', t=terminal_id)}")

    def attach(self, terminal_id: str, *, offset: Optional[int] = None) -> Terminal:
        """Attaches to the terminal over its WebSocket (needs the ``websockets`` package)."""
        url = c.websocket_url(self._http.base_url, self._agent_id, terminal_id, offset)

        def why_refused() -> DshError:
            try:
                self._http.json("GET", self._path)
            except DshError as error:
                return error
            return DshError("NOT_FOUND", f"The terminal {terminal_id!r} refused the connection: no such terminal, "
                                         "or the tenant has its most terminal sockets open.")

        return Terminal(url, self._http.api_key, why_refused)
