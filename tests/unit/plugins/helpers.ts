// Fixtures for the plugin runtime tests: a real runtime (real worker processes, real isolated-vm)
// and a small agent double on the host side of the capabilities: a tool registry that refuses
// built-in names as the agent's registry will, a few agent tools the plugins may call, and the
// agent's event stream. Nothing inside the isolate is faked.
import { SandboxError } from '../../../host/errors.ts';
import type {
  HostEventName,
  JsonValue,
  PluginCapabilities,
  PluginLimits,
  PluginProvider,
  PluginRuntime,
  PluginTool,
  RunResult,
} from '../../../host/plugins/index.ts';
import { createPluginRuntime } from '../../../host/plugins/index.ts';

export const OWNER = { tenantId: 'ten_a', agentId: 'agt_1' };

/** A plugin whose tool counts the words of a file through the agent's `read`. */
export const WORD_COUNT = `return {
  name: 'words',
  apply(ctx) {
    ctx.logger.info('counting words');
    ctx.tools.register({
      name: 'count_words',
      description: 'Counts the words of a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      async execute({ path }, exec) {
        const { content } = await exec.call('read', { file_path: path });
        return { words: content.split(/\\s+/).filter(Boolean).length };
      },
    });
  },
}`;

/** Budgets small enough that hostile plugins end quickly. */
export const TEST_LIMITS: Partial<PluginLimits> = {
  cpuMsPerCallback: 250,
  callWallMs: 2_000,
  startWallMs: 3_000,
};

export const startRuntime = (limits: Partial<PluginLimits> = TEST_LIMITS): PluginRuntime =>
  createPluginRuntime({ limitsOf: () => limits });

export interface InnerCall {
  name: string;
  args: JsonValue;
  parentCallId?: string;
  signal: AbortSignal;
}

export interface FakeAgent {
  capabilities: PluginCapabilities;
  /** Tools plugins registered, by name. */
  tools: Map<string, PluginTool>;
  /** Inspection providers plugins provide, by name. */
  providers: Map<string, PluginProvider>;
  /** Calls plugins made of the agent's tools. */
  calls: InnerCall[];
  /** Sends one of the agent's events to whoever subscribed. */
  emit(name: HostEventName, data: JsonValue): void;
  subscribers(): number;
  /** Calls a registered plugin tool as the pipeline would. */
  call(name: string, args?: JsonValue, signal?: AbortSignal): Promise<JsonValue>;
  /** Resolves the agent tool `wait` calls that are waiting. */
  release(value?: JsonValue): void;
}

const BUILT_IN = new Set(['bash', 'read', 'write', 'run_code']);

export const fakeAgent = (files: Record<string, string> = {}): FakeAgent => {
  const tools = new Map<string, PluginTool>();
  const providers = new Map<string, PluginProvider>();
  const calls: InnerCall[] = [];
  const listeners = new Set<(name: HostEventName, data: JsonValue) => void>();
  let waiting: Array<(value: JsonValue) => void> = [];
  let nextCall = 0;
  const capabilities: PluginCapabilities = {
    registerTool(tool) {
      if (BUILT_IN.has(tool.name) || tools.has(tool.name))
        throw new SandboxError('DUPLICATE_TOOL', `the agent already has a tool named ${tool.name}`);
      tools.set(tool.name, tool);
      return () => {
        if (tools.get(tool.name) === tool) tools.delete(tool.name);
      };
    },
    provide(provider) {
      if (providers.has(provider.name))
        throw new SandboxError('TOOL_NAME_TAKEN', `${provider.name} is already provided`);
      providers.set(provider.name, provider);
      return () => {
        if (providers.get(provider.name) === provider) providers.delete(provider.name);
      };
    },
    async callTool(request, signal) {
      calls.push({ ...request, signal });
      const args = request.args as { file_path?: string };
      switch (request.name) {
        case 'read': {
          const content = files[args.file_path ?? ''];
          if (content === undefined) throw new SandboxError('FILE_NOT_FOUND', `no file ${args.file_path}`);
          return { content };
        }
        case 'echo':
          return request.args;
        case 'wait':
          return new Promise<JsonValue>((resolve, reject) => {
            waiting.push(resolve);
            signal.addEventListener('abort', () => reject(new SandboxError('ABORTED', 'aborted')), {
              once: true,
            });
          });
        default:
          throw new SandboxError('UNKNOWN_TOOL', `unknown tool ${request.name}`);
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return {
    capabilities,
    tools,
    providers,
    calls,
    emit: (name, data) => {
      for (const listener of listeners) listener(name, data);
    },
    subscribers: () => listeners.size,
    call(name, args = {}, signal = new AbortController().signal) {
      const tool = tools.get(name);
      if (tool === undefined) return Promise.reject(new Error(`no plugin tool ${name}`));
      return tool.execute(args, { callId: `call_${++nextCall}`, signal });
    },
    release(value = null) {
      const resolvers = waiting;
      waiting = [];
      for (const resolve of resolvers) resolve(value);
    },
  };
};

let nextPlugin = 0;
/** Starts a plugin with a fresh id; `source` is its host body. */
export const run = (
  runtime: PluginRuntime,
  agent: FakeAgent,
  source: string,
  pluginId = `p${++nextPlugin}`,
  owner = OWNER,
): Promise<RunResult & { pluginId: string }> =>
  runtime
    .start({ owner, pluginId, packageId: `pkg_${pluginId}`, source, capabilities: agent.capabilities })
    .then((result) => ({ ...result, pluginId }));

/** Polls until `check` passes or the deadline ends (then its last error is thrown). */
export const eventually = async (check: () => void | Promise<void>, timeoutMs = 5_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
};

/** A plugin whose `ping` tool answers `pong <n>`: proof that a plugin still works. */
export const WITNESS = `return { name: 'witness', apply(ctx) {
  let n = 0;
  ctx.tools.register({ name: 'ping', description: 'answers pong', parameters: { type: 'object' },
    execute: () => 'pong ' + (++n) });
} }`;
