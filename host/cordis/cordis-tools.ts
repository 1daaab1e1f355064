// The seven cordis_* tools of the creator preset (seed 000, "The Creator preset"), with the seed's
// names and argument shapes. They reach the calling agent's plugins through `services.plugins`,
// which the agent service sets only when it has a plugin host, and are offered only then (and
// only to presets that name them: the creator preset). Failures are SandboxErrors with stable
// codes; a plugin that did not start fails cordis_run with its reason (TOOL_NAME_TAKEN for a tool
// that would shadow another, LIMIT_EXCEEDED past a cap of its agent or tenant with `data.limit`
// naming it, ISOLATE_UNAVAILABLE when the host has no worker for it, TOOL_FAILED otherwise) and
// says where its logs are.
import * as v from 'valibot';
import { SandboxError } from '../errors.ts';
import { defineTool } from '../tools/define.ts';
import type { Disposer } from '../tools/disposer.ts';
import { disposer } from '../tools/disposer.ts';
import { jsonText } from '../tools/json-text.ts';
import type { ToolScope } from '../tools/registry.ts';
import type { ExecContext, JsonValue, ToolDefinition } from '../tools/types.ts';
import type { AgentPlugins, LaunchOutcome } from './view.ts';

declare module '../tools/types.ts' {
  interface ToolServices {
    /** The agent's creator plugins; present only when the service has a plugin host. */
    plugins?: AgentPlugins;
  }
}

const pluginsOf = (exec: ExecContext): AgentPlugins => {
  const plugins = exec.agent.services.plugins as AgentPlugins | undefined;
  if (plugins === undefined)
    throw new SandboxError('TOOL_FAILED', 'This service runs no plugins (it has no isolate host).');
  return plugins;
};

const json = v.custom<JsonValue>(() => true);
const id = (what: string) => v.pipe(v.string(), v.minLength(1), v.maxLength(200), v.description(what));
const text = (value: JsonValue) => [{ type: 'text' as const, text: jsonText(value) }];
const asJson = (value: unknown): JsonValue => value as JsonValue;

const PluginSelector = v.variant('kind', [
  v.object({
    kind: v.literal('new'),
    idPrefix: v.pipe(v.string(), v.description('Start of the new plugin id: 1-32 letters, digits, _ or -')),
  }),
  v.object({ kind: v.literal('existing'), pluginId: id('A plugin this agent already has') }),
]);

const CordisCode = v.pipe(
  v.object({
    host: v.optional(
      v.pipe(
        v.string(),
        v.description("Function body run in the plugin's isolate; returns { name, apply(ctx, config) }"),
      ),
    ),
    client: v.optional(v.pipe(v.string(), v.description('Function body the client runs on its side'))),
  }),
  v.description('Plain JavaScript function bodies, not TypeScript modules; at least one of host or client.'),
);

const inspectList = defineTool({
  name: 'cordis_inspect_list',
  description:
    "List the inspectable runtime providers (host: the tool registry, the plugins, the session log, and those the agent's running plugins provide, with the plugin) and their read-only methods.",
  parameters: v.object({}),
  output: { schema: json, render: (_args, value) => text(value) },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  execute: (_args, exec) => asJson({ providers: pluginsOf(exec).inspect.providers() }),
});

const inspectQuery = defineTool({
  name: 'cordis_inspect_query',
  description:
    "Query an inspection provider's method. platform 'host' runs it here; 'client' asks the client, which runs the plugins' client bodies.",
  parameters: v.object({
    platform: v.picklist(['host', 'client']),
    provider: id('Provider id, as cordis_inspect_list shows it'),
    method: id('Method name'),
    input: v.optional(v.unknown()),
  }),
  output: { schema: json, render: (_args, value) => text(value) },
  isConcurrencySafe: () => true,
  // The host's providers have only read-only methods; what a client runs is the client's business.
  isReadOnly: (args) => args.platform === 'host',
  execute: (args, exec) =>
    pluginsOf(exec).inspect.query(
      {
        platform: args.platform,
        provider: args.provider,
        method: args.method,
        ...(args.input === undefined ? {} : { input: args.input }),
      },
      { callId: exec.callId, signal: exec.signal },
    ),
});

const inspectSelf = defineTool({
  name: 'cordis_inspect_self',
  description:
    "Inspect this agent's dynamic Cordis state: plugins with their packages, state, registered tools, logs and errors; with packageId, that package's code.",
  parameters: v.object({
    pluginId: v.optional(id('Only this plugin')),
    packageId: v.optional(id('Only this package of pluginId, with its code')),
  }),
  output: { schema: json, render: (_args, value) => text(value) },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const plugins = pluginsOf(exec);
    if (args.packageId !== undefined) {
      if (args.pluginId === undefined)
        throw new SandboxError('INVALID_ARGUMENTS', 'packageId needs the pluginId it belongs to.');
      return asJson(await plugins.package(args.pluginId, args.packageId));
    }
    if (args.pluginId !== undefined) return asJson(await plugins.get(args.pluginId));
    // One plugin's detail after another, in list order.
    const details = [];
    for (const p of await plugins.list()) details.push(await plugins.get(p.id));
    return asJson({ plugins: details });
  },
});

const define = defineTool({
  name: 'cordis_define',
  description:
    'Define an immutable dynamic Cordis package: under a new plugin ({ kind: "new", idPrefix }) or an existing one ({ kind: "existing", pluginId }). Defining the same content again returns the stored package.',
  parameters: v.object({
    plugin: PluginSelector,
    name: v.pipe(v.string(), v.description('Short name of the package')),
    purpose: v.pipe(v.string(), v.description('What the package is for')),
    code: CordisCode,
  }),
  output: {
    schema: v.object({ pluginId: v.string(), packageId: v.string(), created: v.boolean() }),
    render: (_args, value) => [
      {
        type: 'text',
        text: `${value.created ? 'Defined' : 'Already defined:'} package ${value.packageId} of plugin ${value.pluginId}. Start it with cordis_run { pluginId: "${value.pluginId}", packageId: "${value.packageId}", mode: "run" }.`,
      },
    ],
  },
  async execute(args, exec) {
    const result = await pluginsOf(exec).define(args);
    return { pluginId: result.plugin.id, packageId: result.package.id, created: result.created };
  },
});

const failedRun = (pluginId: string, packageId: string, outcome: LaunchOutcome): SandboxError => {
  const error = outcome.error as NonNullable<LaunchOutcome['error']>;
  const still = outcome.status.state === 'running' ? ` It still runs ${outcome.status.packageId}.` : '';
  return new SandboxError(
    outcome.code ?? 'TOOL_FAILED',
    `Plugin ${pluginId} did not start package ${packageId} (${error.kind}): ${error.message.replace(/\.$/, '')}.${still} cordis_inspect_self shows its logs.`,
    { data: { kind: error.kind, ...(error.limit ? { limit: error.limit.name, max: error.limit.max } : {}) } },
  );
};

const run = defineTool({
  name: 'cordis_run',
  description:
    "Run a defined package's host body in an isolate of its own (mode run), or replace the running package with another (mode update: the old one's effects are disposed first; if the new one fails the old one comes back). Its tools appear from the next step.",
  parameters: v.object({
    pluginId: id('The plugin'),
    packageId: id('One of its packages'),
    mode: v.picklist(['run', 'update']),
  }),
  output: {
    schema: v.object({
      pluginId: v.string(),
      packageId: v.string(),
      state: v.string(),
      tools: v.array(v.string()),
    }),
    render: (_args, value) => [
      {
        type: 'text',
        text: `Plugin ${value.pluginId} runs package ${value.packageId}; its tools: ${value.tools.length > 0 ? value.tools.join(', ') : '(none)'}.`,
      },
    ],
  },
  async execute(args, exec) {
    const outcome = await pluginsOf(exec).run(args.pluginId, args.packageId, args.mode);
    if (outcome.error !== undefined) throw failedRun(args.pluginId, args.packageId, outcome);
    return {
      pluginId: args.pluginId,
      packageId: outcome.status.packageId ?? args.packageId,
      state: outcome.status.state,
      tools: outcome.status.tools,
    };
  },
});

const stop = defineTool({
  name: 'cordis_stop',
  description: 'Stop a running dynamic plugin: everything it registered (its tools, listeners) is disposed.',
  parameters: v.object({ pluginId: id('The plugin') }),
  output: {
    schema: v.object({ pluginId: v.string(), state: v.string() }),
    render: (_args, value) => [
      { type: 'text', text: `Plugin ${value.pluginId} is ${value.state}; its tools are gone.` },
    ],
  },
  async execute(args, exec) {
    const view = await pluginsOf(exec).stop(args.pluginId);
    return { pluginId: view.id, state: view.state };
  },
});

const undefine = defineTool({
  name: 'cordis_undefine',
  description: 'Remove a dynamic plugin definition and its packages. A running plugin must be stopped first.',
  parameters: v.object({ pluginId: id('The plugin') }),
  output: {
    schema: v.object({ pluginId: v.string(), removed: v.boolean() }),
    render: (_args, value) => [{ type: 'text', text: `Removed plugin ${value.pluginId} and its packages.` }],
  },
  async execute(args, exec) {
    await pluginsOf(exec).undefine(args.pluginId);
    return { pluginId: args.pluginId, removed: true };
  },
});

export const cordisTools = (): ToolDefinition[] => [
  inspectList,
  inspectQuery,
  inspectSelf,
  define,
  run,
  stop,
  undefine,
];

/** Registers the cordis_* tools in `scope`, offered only to agents whose service runs plugins. */
export const registerCordisTools = (scope: ToolScope): Disposer => {
  const when = ({ agent }: { agent: { services: { plugins?: unknown } } }) =>
    agent.services.plugins !== undefined;
  const disposers = cordisTools().map((tool) => scope.register(tool, { when }));
  return disposer(() => {
    for (const dispose of disposers) dispose();
  });
};
