"""dsh_sandbox: the Python client of the dsh-sandbox service.

``Client`` (synchronous) and ``AsyncClient`` (asyncio) reach the same API with the same methods:
agents (create, get, list, delete), tool calls and batches (with live progress, retried safely
with an Idempotency-Key), workspace files, exec, the event log followed live with resume, host
requests, terminals (attached over a WebSocket), the agent's lifecycle (pause and resume,
checkpoints and rollback, workspace snapshots and agents made from them), and every other route by its
operationId (``client.api``). Failures raise DshError with the service's stable ``code``.
Types: dsh_sandbox.types (names people use) over dsh_sandbox.openapi (generated from /openapi.json).
"""

from ._async import AsyncAgent, AsyncAgents, AsyncClient, AsyncFiles, AsyncRequests, AsyncSnapshots, AsyncTerminals
from ._common import Retry, text_of
from ._sync import Agent, Agents, Client, Files, Requests, Snapshots, Terminals
from .errors import DshError, DshToolError
from .terminal import AsyncTerminal, Terminal

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Agents",
    "AsyncAgent",
    "AsyncAgents",
    "AsyncClient",
    "AsyncFiles",
    "AsyncRequests",
    "AsyncSnapshots",
    "AsyncTerminal",
    "AsyncTerminals",
    "Client",
    "DshError",
    "DshToolError",
    "Files",
    "Requests",
    "Retry",
    "Snapshots",
    "Terminal",
    "Terminals",
    "text_of",
]
