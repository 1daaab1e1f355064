"""Server-sent events parsed as the HTML standard's event-stream parser does.

Lines end with CRLF, LF or CR (also split across chunks), ``data`` lines join with LF, ``:`` lines
are comments (the service's ``: ping``), a blank line dispatches, a message without data is not
dispatched, and the last event id carries over to later messages until an ``id`` field changes
it. Pure: no network, so tests feed it text cut anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional


@dataclass
class SseMessage:
    """One dispatched message: ``event`` is ``message`` when the stream names none."""

    event: str
    data: str
    id: Optional[str]
    retry: Optional[int] = None


class SseParser:
    """A push parser: ``feed(text)`` returns the messages that text completed."""

    def __init__(self) -> None:
        self._buffer = ""
        self._skip_lf = False  # the previous chunk ended with CR: a leading LF ends that line
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None
        self._retry: Optional[int] = None
        self._out: List[SseMessage] = []

    def feed(self, text: str) -> List[SseMessage]:
        if self._skip_lf and text.startswith("\n"):
            text = text[1:]
        self._skip_lf = False
        buffer = self._buffer + text
        start = 0
        i = 0
        while i < len(buffer):
            c = buffer[i]
            if c in "\r\n":
                self._line(buffer[start:i])
                if c == "\r":
                    if i + 1 == len(buffer):
                        self._skip_lf = True
                    elif buffer[i + 1] == "\n":
                        i += 1
                start = i + 1
            i += 1
        self._buffer = buffer[start:]
        out, self._out = self._out, []
        return out

    def _line(self, text: str) -> None:
        if text == "":
            if self._data:
                self._out.append(SseMessage(self._event or "message", "\n".join(self._data), self._id, self._retry))
            self._event, self._data, self._retry = "", [], None
            return
        if text.startswith(":"):
            return
        field, colon, value = text.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        elif field == "id" and "\0" not in value:
            self._id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
