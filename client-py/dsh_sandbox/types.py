"""The client's public types by the names people use, each an alias of a generated one (openapi.py).

Nothing here is written by hand but the names: a change of a route's schema changes openapi.py
(generate.ts, checked by tests/unit/client-py/generated.test.ts) and so these.
"""

from __future__ import annotations

from . import openapi as o

ErrorCode = o.ErrorCode
ErrorBody = o.ErrorBody
#: An agent as the service shows it.
Agent = o.GetAgentResponse
#: What ``agents.create`` takes: preset, mode, policy, sandbox limits, …
CreateAgentOptions = o.CreateAgentBody
#: One call's result: ``ok``, the content the model sees, the structured ``value``, or the ``error``.
ToolResult = o.CallToolsResponseResultsItem
#: One event of the agent's durable log.
AgentEvent = o.ListEventsResponseEventsItem
#: A host request: something only the client can answer, typed by kind.
HostRequest = o.ListRequestsResponseRequestsItem
#: Every answer shape the service accepts; the request's kind decides which apply.
RequestAnswer = o.AnswerRequestBody
#: How a command run with ``agent.exec`` ended: exit code, output (each stream cut at 1 MiB, flagged), duration.
ExecResult = o.ExecCommandResponse
#: One of the agent's terminals.
TerminalInfo = o.OpenTerminalResponse
#: One directory of the workspace.
DirectoryListing = o.ListDirectoryResponse
#: An agent's state and usage.
AgentUsage = o.GetAgentUsageResponse
#: A tool the agent's model sees.
Tool = o.ListToolsResponseToolsItem
#: What a file upload answers: the confined path and the bytes written.
Uploaded = o.WriteFileResponse
#: What an archive upload answers: how many files and bytes were extracted.
ArchiveUploaded = o.UploadArchiveResponse
#: What answering a host request answers.
Answered = o.AnswerRequestResponse
#: What pausing or resuming answers: whether it is paused, how, and what it keeps, lost and holds.
PauseView = o.PauseAgentResponse
#: A checkpoint of the agent: a tracked call's (its files' pre-images) or a ``checkpoint`` mark.
Checkpoint = o.ListCheckpointsResponseCheckpointsItem
#: What a rollback answers: the calls undone, the files restored and removed.
RollbackView = o.RollbackAgentResponse
#: A workspace snapshot: its id, agent, node, size limit and host disk.
SnapshotView = o.SnapshotAgentResponse
