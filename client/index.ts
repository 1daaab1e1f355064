// @dsh-sandbox/client: the typed TypeScript client of the dsh-sandbox API. Types come from
// ./openapi.ts (generated from the service's /openapi.json); at runtime it needs openapi-fetch
// (bundled into the published build, ./build.ts) and what Node 20+ and browsers have (fetch, web
// streams, AbortSignal.any; WebSocket for terminals, global from Node 22).
export { type CallOptions, DshAgent, textOf } from './agent.ts';
export { Agents, DshClient, Snapshots } from './client.ts';
export { DshError, type DshErrorOptions, DshToolError, isDshError } from './errors.ts';
export type { EventsOptions } from './events.ts';
export { AgentFiles, type UploadBody } from './files.ts';
export type { AgentHandles, TenantHandles } from './handles.ts';
export type { DshClientOptions, WebSocketClass, WebSocketLike } from './http.ts';
export type { components, operations, paths } from './openapi.ts';
export type { OnRequestOptions, RequestHandler, RequestListener } from './requests.ts';
export type { RetryOptions } from './retry.ts';
export { createSseParser, readSse, type SseMessage } from './sse.ts';
export { type DshTerminal, TERMINAL_PROTOCOL, type TerminalOptions } from './terminal.ts';
export type * from './types.ts';
