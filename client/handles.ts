// The agent's and the tenant's other resources as small handles over the typed routes: the
// agent's remote tools, steps, conversation messages, MCP servers, plan mode, todos and goal,
// schedules, children and mailbox, and plugins (agentHandles, spread into DshAgent); the tenant's
// skills and egress settings (tenantHandles, on DshClient). Each method is one request; nothing is
// cached. Routes whose query the document does not declare (children's scope, the mailbox's
// after) go through `transport.request` with the query written here.
import type { UploadBody } from './files.ts';
import { ok, pathOf, type Transport } from './http.ts';
import type {
  ChildAgent,
  ChildrenScope,
  ConversationMessage,
  EgressSettings,
  EgressUpdate,
  Goal,
  MailboxMessage,
  McpServerInfo,
  McpServerSpec,
  MessagesAppended,
  PluginDetail,
  PluginInfo,
  PluginPackage,
  RemoteToolsRegistered,
  RemoteToolsRegistration,
  Schedule,
  SkillDetail,
  SkillInfo,
  Step,
  Todos,
} from './types.ts';

export interface AgentHandles {
  /** Tools the client runs: the agent calls them, the client answers their host requests. */
  readonly remoteTools: {
    /** Registers (or replaces, by name) client-executed tools; their calls become `remote_tool` requests. */
    register(tools: RemoteToolsRegistration['tools']): Promise<RemoteToolsRegistered>;
  };
  /** Opens a step: the tools the model sees, resolved once; pass its `stepId` as CallOptions.step. */
  step(): Promise<Step>;
  /** The client's conversation, kept in the agent's log as `message.user` / `message.assistant` events. */
  readonly messages: {
    append(messages: readonly ConversationMessage[]): Promise<MessagesAppended>;
  };
  /** MCP servers as the agent's tool sources (their tools are `mcp__<server>__<tool>`). */
  readonly mcpServers: {
    list(): Promise<McpServerInfo[]>;
    get(name: string): Promise<McpServerInfo>;
    /** Starts a stdio server in the sandbox, or connects a remote one; the same name replaces it. */
    register(spec: McpServerSpec): Promise<McpServerInfo>;
    remove(name: string): Promise<void>;
  };
  /** Plan mode: while on, only read-only tools run (others fail with PLAN_MODE). */
  readonly planMode: {
    get(): Promise<boolean>;
    set(on: boolean): Promise<boolean>;
  };
  /** The session's task list, as the agent's `todo_write` last replaced it. */
  todos(): Promise<Todos['todos']>;
  /** The session's current goal; null before the agent's `create_goal`. */
  goal(): Promise<Goal['goal']>;
  /** The agent's schedules (made by its `schedule_create` calls). */
  readonly schedules: {
    list(): Promise<Schedule[]>;
    delete(scheduleId: string): Promise<void>;
  };
  /** The agents this agent made (default), all its descendants, or its team. */
  children(scope?: ChildrenScope): Promise<ChildAgent[]>;
  /** The agent's mailbox: read it (after a message id), or take its unread messages once. */
  readonly mailbox: {
    list(after?: number): Promise<MailboxMessage[]>;
    take(): Promise<MailboxMessage[]>;
  };
  /** The agent's creator plugins: listed, one with its packages and logs, one package's code. */
  readonly plugins: {
    list(): Promise<PluginInfo[]>;
    get(pluginId: string): Promise<PluginDetail>;
    package(pluginId: string, packageId: string): Promise<PluginPackage>;
  };
}

export function agentHandles(transport: Transport, id: string): AgentHandles {
  const { api } = transport;
  const path = { id };
  return {
    remoteTools: {
      register: (tools) =>
        ok(api.POST('/v1/agents/{id}/remote-tools', { params: { path }, body: { tools } })),
    },
    step: () => ok(api.POST('/v1/agents/{id}/steps', { params: { path } })),
    messages: {
      append: (messages) =>
        ok(api.POST('/v1/agents/{id}/messages', { params: { path }, body: { messages: [...messages] } })),
    },
    mcpServers: {
      list: async () => (await ok(api.GET('/v1/agents/{id}/mcp-servers', { params: { path } }))).servers,
      get: (name) => ok(api.GET('/v1/agents/{id}/mcp-servers/{name}', { params: { path: { id, name } } })),
      register: (spec) => ok(api.POST('/v1/agents/{id}/mcp-servers', { params: { path }, body: spec })),
      remove: async (name) => {
        await ok(api.DELETE('/v1/agents/{id}/mcp-servers/{name}', { params: { path: { id, name } } }));
      },
    },
    planMode: {
      get: async () => (await ok(api.GET('/v1/agents/{id}/plan-mode', { params: { path } }))).planMode,
      set: async (on) =>
        (await ok(api.PUT('/v1/agents/{id}/plan-mode', { params: { path }, body: { planMode: on } })))
          .planMode,
    },
    todos: async () => (await ok(api.GET('/v1/agents/{id}/todos', { params: { path } }))).todos,
    goal: async () => (await ok(api.GET('/v1/agents/{id}/goal', { params: { path } }))).goal,
    schedules: {
      list: async () => (await ok(api.GET('/v1/agents/{id}/schedules', { params: { path } }))).schedules,
      delete: async (sid) => {
        await ok(api.DELETE('/v1/agents/{id}/schedules/{sid}', { params: { path: { id, sid } } }));
      },
    },
    children: async (scope) => {
      const query = scope === undefined ? '' : `?${new URLSearchParams({ scope })}`;
      const url = `${pathOf('/v1/agents/{id}/children', path)}${query}`;
      return ((await (await transport.request(url)).json()) as { agents: ChildAgent[] }).agents;
    },
    mailbox: {
      list: async (after) => {
        const query = after === undefined ? '' : `?${new URLSearchParams({ after: String(after) })}`;
        const url = `${pathOf('/v1/agents/{id}/mailbox', path)}${query}`;
        return ((await (await transport.request(url)).json()) as { messages: MailboxMessage[] }).messages;
      },
      take: async () => (await ok(api.POST('/v1/agents/{id}/mailbox/take', { params: { path } }))).messages,
    },
    plugins: {
      list: async () => (await ok(api.GET('/v1/agents/{id}/plugins', { params: { path } }))).plugins,
      get: (pluginId) =>
        ok(api.GET('/v1/agents/{id}/plugins/{pluginId}', { params: { path: { id, pluginId } } })),
      package: (pluginId, packageId) =>
        ok(
          api.GET('/v1/agents/{id}/plugins/{pluginId}/packages/{packageId}', {
            params: { path: { id, pluginId, packageId } },
          }),
        ),
    },
  };
}

export interface TenantHandles {
  /** The tenant's skill catalog: packages (uncompressed tar with a SKILL.md) its agents' `skill` tool loads. */
  readonly skills: {
    list(): Promise<SkillInfo[]>;
    get(name: string): Promise<SkillDetail>;
    /** Creates or replaces skill `name` from an uncompressed tar. */
    put(name: string, tar: UploadBody): Promise<SkillDetail>;
    delete(name: string): Promise<void>;
  };
  /** The tenant's egress settings: what its agents may reach, with which credentials and budget. */
  readonly egress: {
    get(): Promise<EgressSettings>;
    /** Replaces the settings; the answer shows credentials by name only. */
    put(settings: EgressUpdate): Promise<EgressSettings>;
  };
}

export function tenantHandles(transport: Transport): TenantHandles {
  const { api } = transport;
  return {
    skills: {
      list: async () => (await ok(api.GET('/v1/skills'))).skills,
      get: (name) => ok(api.GET('/v1/skills/{name}', { params: { path: { name } } })),
      put: async (name, tar) => {
        const response = await transport.request(pathOf('/v1/skills/{name}', { name }), {
          method: 'PUT',
          headers: { 'Content-Type': 'application/x-tar' },
          body: tar as NonNullable<RequestInit['body']>,
        });
        return (await response.json()) as SkillDetail;
      },
      delete: async (name) => {
        await ok(api.DELETE('/v1/skills/{name}', { params: { path: { name } } }));
      },
    },
    egress: {
      get: () => ok(api.GET('/v1/egress')),
      put: (settings) => ok(api.PUT('/v1/egress', { body: settings })),
    },
  };
}
