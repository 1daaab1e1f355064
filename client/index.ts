// @dsh-sandbox/client: the typed TypeScript client of the dsh-sandbox API. Types come from
// ./openapi.ts (generated from the service's /openapi.json); runtime needs only openapi-fetch and
// what Node 22+ and browsers have (fetch, web streams, WebSocket).
export { type CallOptions, DshAgent, textOf } from './agent.ts';
export { Agents, DshClient } from './client.ts';
export { DshError, type DshErrorOptions, DshToolError, isDshError } from './errors.ts';
export type { EventsOptions } from './events.ts';
export { AgentFiles, type UploadBody } from './files.ts';
export type { DshClientOptions } from './http.ts';
export type { components, operations, paths } from './openapi.ts';
export type { OnRequestOptions, RequestHandler, RequestListener } from './requests.ts';
export type { RetryOptions } from './retry.ts';
export { createSseParser, readSse, type SseMessage } from './sse.ts';
export { type DshTerminal, TERMINAL_PROTOCOL, type TerminalOptions } from './terminal.ts';
export type * from './types.ts';
