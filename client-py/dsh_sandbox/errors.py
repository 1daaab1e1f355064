"""Errors as exceptions with the service's stable code.

Every failure the service reports becomes a DshError carrying its stable ``code`` (the ErrorCode
literal of /openapi.json, host/errors.ts on the server), the HTTP status, the error's structured
``data`` and the parsed body; a tool call that ran and failed becomes a DshToolError carrying its
result. Responses are translated here once, so the rest of the client only raises what this
module makes. Switch on ``code``, never on the message.
"""

from __future__ import annotations

import json
from typing import Any, Optional, cast

from .openapi import ErrorCode


class DshError(Exception):
    """An error the service reported, with its stable code."""

    code: ErrorCode
    status: Optional[int]
    data: Any
    body: Any
    retry_after_s: Optional[float]

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        status: Optional[int] = None,
        data: Any = None,
        body: Any = None,
        retry_after_s: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.data = data
        self.body = body
        self.retry_after_s = retry_after_s

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class DshToolError(DshError):
    """A tool call that ran and failed (``ok: false``); ``result`` is the whole result."""

    def __init__(self, result: Any) -> None:
        error = result.get("error") or {}
        super().__init__(
            error.get("code", "TOOL_FAILED"),
            error.get("message", f"The call {result.get('name')} failed."),
            data=result,
        )
        self.result = result


def _code_of_status(status: int) -> ErrorCode:
    """The code of a response whose body says none (a proxy's page, an empty body)."""
    known = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 413: "PAYLOAD_TOO_LARGE",
             429: "RATE_LIMITED", 503: "SHUTTING_DOWN", 504: "REQUEST_TIMEOUT"}
    if status in known:
        return cast(ErrorCode, known[status])
    return "INTERNAL" if status >= 500 else "BAD_REQUEST"


def error_from_body(status: int, text: str, retry_after: Optional[str] = None) -> DshError:
    """The error of a response status and its body's text (JSON of the service, or anything)."""
    body: Any = text
    try:
        body = json.loads(text) if text else None
    except ValueError:
        pass
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    # A code this version does not know yet still comes through as the service sent it.
    code = cast(ErrorCode, error["code"]) if isinstance(error.get("code"), str) else _code_of_status(status)
    message = error.get("message")
    if not isinstance(message, str):
        shown = f": {text[:200]}" if isinstance(body, str) and body else ""
        message = f"The service answered HTTP {status}{shown}."
    seconds: Optional[float] = None
    if retry_after is not None:
        try:
            seconds = float(retry_after)
        except ValueError:
            seconds = None
    return DshError(code, message, status=status, data=error.get("data"), body=body, retry_after_s=seconds)
