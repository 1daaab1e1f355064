// Runtime inspection for cordis_inspect_list / cordis_inspect_query (seed 000): providers with
// read-only methods. The host's own: the agent's tool registry (`tools`), its plugins (`plugins`)
// and its session log (`session`); beside them, with platform 'host', the providers the agent's
// running plugins provide (ctx.inspect.provide), whose methods run in that plugin's isolate under
// its budgets. A query with `platform: 'client'` is a `plugin_client_query` host request the
// client answers (it runs the client bodies). Invariants: every method reads only the agent it
// was made for (a plugin provider is looked up among that agent's only); inputs are checked and
// outputs bounded (SESSION_PAGE events; a plugin method's result by its maxValueBytes).

import type { Agent } from '../agents/types.ts';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { PluginProvider } from '../plugins/index.ts';
import { awaitRequest, pluginClientQueryKind, type RequestStore } from '../requests/index.ts';
import type { EventLog } from '../store/types.ts';
import type { ToolSchema } from '../tools/types.ts';

/** Events one `session.events` query returns at most. */
export const SESSION_PAGE = 50;
/** How long the client has to answer a client query. */
export const CLIENT_QUERY_TTL_MS = 120_000;

export interface ProviderMethod {
  name: string;
  description: string;
  /** JSON Schema of the input, when the method takes one. */
  input?: { [key: string]: JsonValue };
}

export interface Provider {
  platform: 'host' | 'client';
  id: string;
  description: string;
  /** The plugin that provides it; absent for the host's own. */
  pluginId?: string;
  methods: ProviderMethod[];
}

export interface Inspector {
  providers(): Provider[];
  query(
    request: { platform: 'host' | 'client'; provider: string; method: string; input?: unknown },
    call: { callId: string; signal: AbortSignal },
  ): Promise<JsonValue>;
}

export interface InspectorOptions {
  agent: Agent;
  events: EventLog;
  requests: RequestStore;
  /** The agent's model-facing tools. */
  tools(): Promise<ToolSchema[]>;
  /** The agent's plugins, and one of them with its packages. */
  plugins(): Promise<JsonValue>;
  plugin(pluginId: string): Promise<JsonValue>;
  /** The providers the agent's running plugins provide now. */
  provided(): PluginProvider[];
}

const HOST_PROVIDERS: Provider[] = [
  {
    platform: 'host',
    id: 'tools',
    description: "The agent's tool registry: the tools its model sees now, plugin tools included.",
    methods: [{ name: 'list', description: 'Name, description and parameters of each visible tool.' }],
  },
  {
    platform: 'host',
    id: 'plugins',
    description: "The agent's plugins: state, packages, tools, logs and errors.",
    methods: [
      { name: 'list', description: 'Every plugin of the agent.' },
      {
        name: 'get',
        description: 'One plugin with its packages and recent logs.',
        input: { type: 'object', properties: { pluginId: { type: 'string' } }, required: ['pluginId'] },
      },
    ],
  },
  {
    platform: 'host',
    id: 'session',
    description: "The agent's durable session log (calls, results, tool set changes).",
    methods: [
      {
        name: 'events',
        description: `Events after a seq, at most ${SESSION_PAGE} (type, call ids, tool name, ok).`,
        input: {
          type: 'object',
          properties: {
            after: { type: 'integer', minimum: 0 },
            limit: { type: 'integer', minimum: 1, maximum: SESSION_PAGE },
          },
        },
      },
    ],
  },
];

/** Provider ids a plugin may not take. */
export const HOST_PROVIDER_IDS: readonly string[] = HOST_PROVIDERS.map((p) => p.id);

const listed = (p: PluginProvider): Provider => ({
  platform: 'host',
  id: p.name,
  description: p.description,
  pluginId: p.pluginId,
  methods: p.methods.map((name) => ({ name, description: '' })),
});

const unknownMethod = (provider: string, method: string): SandboxError =>
  new SandboxError(
    'NOT_FOUND',
    `The host has no inspection method ${provider}.${method}; cordis_inspect_list lists them.`,
  );

const field = (input: unknown, key: string): unknown =>
  typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[key] : undefined;

export function createInspector(options: InspectorOptions): Inspector {
  const { agent } = options;

  async function sessionEvents(input: unknown): Promise<JsonValue> {
    const after = field(input, 'after') ?? 0;
    const limit = field(input, 'limit') ?? SESSION_PAGE;
    if (!Number.isInteger(after) || (after as number) < 0 || !Number.isInteger(limit))
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        'session.events takes { after?: integer, limit?: integer }.',
      );
    const page = await options.events.list(agent.sessionId, {
      afterSeq: after as number,
      limit: Math.min(Math.max(limit as number, 1), SESSION_PAGE),
      payloads: 'refs',
    });
    return page.map((e) => {
      const data = e.data as { name?: JsonValue; ok?: JsonValue };
      const out: { [key: string]: JsonValue } = { seq: e.seq, type: e.type, at: e.at };
      if (e.callId !== undefined) out.callId = e.callId;
      if (e.parentCallId !== undefined) out.parentCallId = e.parentCallId;
      if (typeof data?.name === 'string') out.name = data.name;
      if (typeof data?.ok === 'boolean') out.ok = data.ok;
      return out;
    });
  }

  async function host(provider: string, method: string, input: unknown): Promise<JsonValue> {
    switch (`${provider}.${method}`) {
      case 'tools.list':
        return (await options.tools()).map((t) => ({
          name: t.name,
          description: t.description,
          parameters: t.parameters as JsonValue,
        }));
      case 'plugins.list':
        return options.plugins();
      case 'plugins.get': {
        const pluginId = field(input, 'pluginId');
        if (typeof pluginId !== 'string')
          throw new SandboxError('INVALID_ARGUMENTS', 'plugins.get takes { pluginId: string }.');
        return options.plugin(pluginId);
      }
      case 'session.events':
        return sessionEvents(input);
      default:
        throw unknownMethod(provider, method);
    }
  }

  /** A plugin provider's method, run in its plugin's isolate; the input crosses as JSON. */
  function plugin(
    provider: PluginProvider,
    method: string,
    input: unknown,
    call: { callId: string; signal: AbortSignal },
  ): Promise<JsonValue> {
    if (!provider.methods.includes(method)) return Promise.reject(unknownMethod(provider.name, method));
    return provider.query(method, (input ?? null) as JsonValue, call);
  }

  return {
    providers: () => [
      ...HOST_PROVIDERS.map((p) => ({ ...p, methods: p.methods.map((m) => ({ ...m })) })),
      ...options.provided().map(listed),
    ],
    async query(request, call) {
      if (request.platform === 'host') {
        if (!HOST_PROVIDER_IDS.includes(request.provider)) {
          const provided = options.provided().find((p) => p.name === request.provider);
          if (provided !== undefined) return plugin(provided, request.method, request.input, call);
        }
        return host(request.provider, request.method, request.input);
      }
      return awaitRequest(
        options.requests,
        pluginClientQueryKind,
        {
          sessionId: agent.sessionId,
          callId: call.callId,
          payload: {
            provider: request.provider,
            method: request.method,
            ...(request.input === undefined ? {} : { input: request.input as JsonValue }),
          },
          ttlMs: CLIENT_QUERY_TTL_MS,
        },
        call.signal,
      );
    },
  };
}
