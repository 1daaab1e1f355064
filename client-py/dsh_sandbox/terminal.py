"""A person's attachment to one of the agent's terminals over the terminal WebSocket.

Uses the ``websockets`` package (Debian: python3-websockets; pip: the ``terminals`` extra); the
rest of the client works without it. The key travels in the Authorization header, never in the
URL. Input is always sent as binary frames, so typed text that happens to be JSON is never read
as a control; resize and signal are the text controls. Output arrives as bytes: the buffered
output first (from ``offset`` when given), then live. AsyncTerminal is the asyncio one; Terminal
drives the same on a loop of its own for the synchronous client.
"""

from __future__ import annotations

import asyncio
import json
from typing import AsyncIterator, Awaitable, Callable, Iterator, Optional, Union

from .errors import DshError

PROTOCOL = "dsh.terminal.v1"


class AsyncTerminal:
    """An open terminal socket: ``send``, ``resize``, ``signal``, iterate the output, ``close``."""

    def __init__(self, socket: object) -> None:
        self._socket = socket

    async def send(self, data: Union[str, bytes]) -> None:
        """Input as typed (``\\r`` is Enter)."""
        await self._socket.send(data.encode() if isinstance(data, str) else bytes(data))  # type: ignore[attr-defined]

    async def resize(self, cols: int, rows: int) -> None:
        await self._socket.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))  # type: ignore[attr-defined]

    async def signal(self, name: str) -> None:
        """Sends a signal (SIGINT, SIGTERM, SIGKILL, …) to the terminal's foreground program."""
        await self._socket.send(json.dumps({"type": "signal", "signal": name}))  # type: ignore[attr-defined]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """The output until the socket closes (see ``close_code`` for why)."""
        import websockets

        try:
            async for message in self._socket:  # type: ignore[attr-defined]
                yield message if isinstance(message, bytes) else message.encode()
        except websockets.ConnectionClosed:  # type: ignore[attr-defined]  # a lazy export
            return

    async def read_until(self, text: str, timeout_s: float = 30.0) -> str:
        """The output (decoded) up to and including the first ``text``; TimeoutError past ``timeout_s``."""
        seen = b""
        needle = text.encode()

        async def read() -> str:
            nonlocal seen
            async for chunk in self:
                seen += chunk
                if needle in seen:
                    return seen.decode(errors="replace")
            raise DshError("CONFLICT", f"The terminal closed before {text!r} appeared.")

        return await asyncio.wait_for(read(), timeout_s)

    @property
    def close_code(self) -> Optional[int]:
        """1000 when the terminal's program exited or on close(); None while open."""
        return self._socket.close_code  # type: ignore[attr-defined]

    async def close(self) -> None:
        """Detaches (the terminal keeps running in the sandbox)."""
        await self._socket.close(1000)  # type: ignore[attr-defined]

    async def __aenter__(self) -> "AsyncTerminal":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


async def connect_terminal(url: str, api_key: str, why_refused: Callable[[], Awaitable[DshError]]) -> AsyncTerminal:
    try:
        import websockets
    except ImportError as error:
        raise DshError("BAD_REQUEST", "Terminals need the websockets package (apt-get install python3-websockets, "
                                      "or pip install 'dsh-sandbox[terminals]').") from error
    # websockets 14 renamed the header argument and the refusal (the legacy names stay before it).
    major = int(websockets.__version__.split(".")[0])
    headers = {"additional_headers" if major >= 14 else "extra_headers": {"Authorization": f"Bearer {api_key}"}}
    refusals = tuple(getattr(websockets, name) for name in ("InvalidStatusCode", "InvalidStatus")
                     if hasattr(websockets, name))
    try:
        socket = await websockets.connect(  # type: ignore[attr-defined]  # a lazy export
            url, subprotocols=[PROTOCOL], max_size=None, **headers)
    except refusals as refused:
        raise await why_refused() from refused
    return AsyncTerminal(socket)


class Terminal:
    """The synchronous twin of AsyncTerminal: the same socket, driven on an event loop of its own.

    websockets 10 (Debian's) has only an asyncio client, so the socket lives on a private loop in a
    daemon thread and each method waits for its step there; ``close`` ends the socket, then the loop.
    """

    def __init__(self, url: str, api_key: str, why_refused: Callable[[], DshError]) -> None:
        import threading

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="dsh-terminal", daemon=True)
        self._thread.start()

        async def refused() -> DshError:
            return why_refused()

        try:
            self._terminal = self._run(connect_terminal(url, api_key, refused))
        except BaseException:
            self._stop()
            raise

    def _run(self, step: Awaitable, timeout_s: Optional[float] = None):
        return asyncio.run_coroutine_threadsafe(step, self._loop).result(timeout_s)  # type: ignore[arg-type]

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def send(self, data: Union[str, bytes]) -> None:
        """Input as typed (``\\r`` is Enter)."""
        self._run(self._terminal.send(data))

    def resize(self, cols: int, rows: int) -> None:
        self._run(self._terminal.resize(cols, rows))

    def signal(self, name: str) -> None:
        """Sends a signal (SIGINT, SIGTERM, SIGKILL, …) to the terminal's foreground program."""
        self._run(self._terminal.signal(name))

    def read_until(self, text: str, timeout_s: float = 30.0) -> str:
        """The output (decoded) up to and including the first ``text``; TimeoutError past ``timeout_s``."""
        return self._run(self._terminal.read_until(text, timeout_s))

    def __iter__(self) -> Iterator[bytes]:
        """The output until the socket closes (see ``close_code`` for why)."""
        chunks = self._terminal.__aiter__()
        while True:
            try:
                yield self._run(chunks.__anext__())
            except StopAsyncIteration:
                return

    @property
    def close_code(self) -> Optional[int]:
        return self._terminal.close_code

    def close(self) -> None:
        """Detaches (the terminal keeps running in the sandbox)."""
        if self._thread.is_alive():
            try:
                self._run(self._terminal.close(), 10)
            finally:
                self._stop()

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
