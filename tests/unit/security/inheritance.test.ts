// Issue 28: a restriction follows every path to a new agent. The fields are read from the API's own
// schema (CreateAgent, nested objects walked), so a field added later without a case here, or
// without a rule in host/agents/inherit.ts, fails this file. For every field, a parent restrictive in
// it makes children by every path (subagent, subagent_fork, a subagent_<provider> alias,
// spawn_teammate, and the team service directly, role child and teammate, fresh and forked) and
// each child's stored config must be at least as restrictive; a child asking for a wider setting
// still gets at most its parent's; a parent in plan mode now makes children in plan mode.
import type * as v from 'valibot';
import { afterEach, describe, expect, it } from 'vitest';
import { INHERITANCE, inheritRequest } from '../../../host/agents/inherit.ts';
import type { Agent, AgentConfig, CreateAgentRequest } from '../../../host/agents/types.ts';
import { CreateAgent } from '../../../host/api/schemas.ts';
import { intersectRules } from '../../../host/egress/intersect.ts';
import { canonicalRules, type EgressRule, decide as egressDecide } from '../../../host/egress/rules.ts';
import type { Decision, PreExecuteListener } from '../../../host/tools/index.ts';
import { agentPolicies, type PolicySpec, rulesPolicy } from '../../../policies/index.ts';
import { type Api, type Loose, makeApi } from '../api/harness.ts';

let api: Api | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** An agent as GET /v1/agents/:id shows it (and as inheritRequest's output reads). */
interface Shown {
  preset: string;
  mode: string;
  config: AgentConfig;
}

/** The dotted path of every field of a schema, nested objects walked to their leaves. */
function fieldPaths(schema: v.GenericSchema, prefix = ''): string[] {
  const entries = (schema as unknown as { entries?: Record<string, v.GenericSchema> }).entries;
  if (entries === undefined) return [prefix];
  return Object.entries(entries).flatMap(([key, entry]) => {
    let inner = entry as unknown as { type: string; wrapped?: v.GenericSchema };
    while (inner.type === 'optional' && inner.wrapped) inner = inner.wrapped as unknown as typeof inner;
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const nested = inner.type === 'strict_object' || inner.type === 'object';
    return nested ? fieldPaths(inner as unknown as v.GenericSchema, path) : [path];
  });
}

// ---- "at least as restrictive", per kind of field ------------------------------------------------

const STRICTNESS = { allow: 0, ask: 1, deny: 2 } as const;

/** The decision an agent's policy makes for a call (the rules policy agentPolicies installs). */
function decisionOf(policy: AgentConfig['policy'], name: string, args: unknown): Decision['kind'] {
  const listeners: PreExecuteListener[] = [];
  for (const spec of agentPolicies(policy) as PolicySpec[])
    rulesPolicy(spec.config as never).install({
      on: (_phase: string, listener: PreExecuteListener) => {
        listeners.push(listener);
        return () => {};
      },
      guard: () => () => {},
    } as never);
  let decision: Decision = { kind: 'allow' };
  for (const listener of listeners)
    decision = (listener({ name, arguments: args } as never, decision) as Decision | undefined) ?? decision;
  return decision.kind;
}

const PROBE_CALLS: [string, unknown][] = [
  ['bash', { command: 'rm -rf /workspace' }],
  ['bash', { command: 'ls' }],
  ['write', { file_path: 'secret/key', content: 'x' }],
  ['write', { file_path: 'notes.md', content: 'x' }],
  ['read', { file_path: 'secret/key' }],
  ['web_fetch', { url: 'http://127.0.0.3/' }],
  ['subagent', { description: 'd', prompt: 'p' }],
];

function policyHolds(child: Shown, parent: Shown): void {
  const p = parent.config.policy ?? {};
  const c = child.config.policy ?? {};
  for (const [name, args] of PROBE_CALLS)
    expect(
      STRICTNESS[decisionOf(c, name, args)],
      `${name} ${JSON.stringify(args)}: the child's policy decides less strictly than its parent's`,
    ).toBeGreaterThanOrEqual(STRICTNESS[decisionOf(p, name, args)]);
  if (p.planMode === true) expect(c.planMode).toBe(true);
  if (p.sessions === 'own') expect(c.sessions).toBe('own');
  for (const shadow of c.pluginShadows ?? []) expect(p.pluginShadows ?? []).toContain(shadow);
}

const TOOLS = ['bash', 'read', 'write', 'edit', 'grep', 'subagent', 'spawn_teammate'];
const visible = (restrict: AgentConfig['restrict'], tool: string): boolean =>
  restrict === undefined
    ? true
    : 'allow' in restrict
      ? restrict.allow.includes(tool)
      : !restrict.deny.includes(tool);

const limitHolds =
  (group: 'sandbox' | 'codeMode', key: string) =>
  (child: Shown, parent: Shown): void => {
    const mine = (parent.config[group] as Record<string, number> | undefined)?.[key];
    if (mine === undefined) return;
    const theirs = (child.config[group] as Record<string, number> | undefined)?.[key];
    expect(theirs, `${group}.${key}`).toBeDefined();
    expect(theirs).toBeLessThanOrEqual(mine);
  };

const capabilityHolds =
  (key: 'subagents' | 'teams' | 'fetch') =>
  (child: Shown, parent: Shown): void => {
    if (child.config[key] === true) expect(parent.config[key], key).toBe(true);
  };

const PROBE_DESTINATIONS = [
  { host: '127.0.0.2', port: 8080, method: 'GET' },
  { host: '127.0.0.2', port: 8080, method: 'POST' },
  { host: '127.0.0.2', port: 443 },
  { host: '127.0.0.3', port: 8080, method: 'GET' },
  { host: 'example.com', port: 443 },
  { host: 'api.example.com', port: 443, method: 'GET' },
];
const ANYWHERE: EgressRule[] = [{ host: '*', ports: [80, 443, 8080] }];

function egressHolds(child: Shown, parent: Shown): void {
  const p = parent.config.egress?.allow;
  const c = child.config.egress?.allow;
  if (p === undefined) return;
  expect(c, "the child's egress").toBeDefined();
  for (const to of PROBE_DESTINATIONS)
    if (egressDecide(ANYWHERE, c, to).kind === 'allow')
      expect(egressDecide(ANYWHERE, p, to).kind, `${JSON.stringify(to)} admitted for the child only`).toBe(
        'allow',
      );
}

// ---- one case per field --------------------------------------------------------------------------

const hold = { name: 'hold', description: 'Waits for the client', parameters: { type: 'object' } };
const extra = { name: 'extra', description: 'Not a tool of the parent', parameters: { type: 'object' } };

interface Case {
  /** The parent, restrictive in this field (over a base that can spawn by every path). */
  parent: CreateAgentRequest;
  /** What a child asking for more than its parent asks for. */
  wider: CreateAgentRequest;
  holds(child: Shown, parent: Shown): void;
}

const policyCase = (policy: CreateAgentRequest['policy'], wider: CreateAgentRequest['policy']): Case => ({
  parent: { policy },
  wider: { policy: wider },
  holds: policyHolds,
});
const limitCase = (group: 'sandbox' | 'codeMode', key: string, mine: number, theirs: number): Case => ({
  parent: { [group]: { [key]: mine } },
  wider: { [group]: { [key]: theirs } },
  holds: limitHolds(group, key),
});

const CASES: Record<string, Case> = {
  preset: {
    parent: { preset: 'creator' },
    wider: { preset: 'standard' },
    holds: (c, p) => expect(c.preset).toBe(p.preset),
  },
  mode: {
    parent: { preset: 'standard', mode: 'native' },
    wider: { mode: 'both' },
    holds: (c, p) => expect(c.mode).toBe(p.mode),
  },
  restrict: {
    parent: { restrict: { deny: ['bash', 'write'] } },
    wider: { restrict: { allow: ['bash', 'write', 'read'] } },
    holds: (c, p) => {
      for (const tool of TOOLS)
        if (visible(c.config.restrict, tool)) expect(visible(p.config.restrict, tool), tool).toBe(true);
    },
  },
  'policy.ask': policyCase({ ask: ['write'] }, { rules: [{ tool: 'write', decision: 'allow' }] }),
  'policy.deny': policyCase({ deny: ['bash'] }, { rules: [{ tool: '*', decision: 'allow' }] }),
  'policy.rules': policyCase(
    {
      rules: [
        { tool: 'bash', when: { command: 'rm' }, decision: 'deny' },
        { tool: 'read', when: { file_path: '^secret/' }, decision: 'ask' },
      ],
    },
    { rules: [{ tool: '*', decision: 'allow' }], ask: [], deny: [] },
  ),
  'policy.planMode': policyCase({ planMode: true }, { planMode: false }),
  'policy.sessions': policyCase({ sessions: 'own' }, { sessions: 'tenant' }),
  'policy.pluginShadows': policyCase(
    { pluginShadows: ['read'] },
    { pluginShadows: ['read', 'write', 'bash'] },
  ),
  'sandbox.memoryMb': limitCase('sandbox', 'memoryMb', 256, 4096),
  'sandbox.cpus': limitCase('sandbox', 'cpus', 0.5, 8),
  'sandbox.pids': limitCase('sandbox', 'pids', 64, 4096),
  'sandbox.diskMb': limitCase('sandbox', 'diskMb', 64, 8192),
  // The runtime is the parent's: a child never picks another (its sandbox may be the parent's).
  'sandbox.runtime': {
    parent: { sandbox: { runtime: 'runc' } },
    wider: { sandbox: { runtime: 'gvisor', memoryMb: 128 } },
    holds: (c, p) => expect(c.config.sandbox?.runtime).toBe(p.config.sandbox?.runtime),
  },
  'codeMode.cpuMs': limitCase('codeMode', 'cpuMs', 100, 60_000),
  'codeMode.wallMs': limitCase('codeMode', 'wallMs', 1000, 600_000),
  remoteTools: {
    parent: { remoteTools: [hold] },
    wider: { remoteTools: [{ ...hold, readOnly: true }, extra] },
    holds: (c, p) => {
      for (const tool of c.config.remoteTools ?? [])
        expect(tool, `remote tool ${tool.name}`).toEqual(
          p.config.remoteTools?.find((t) => t.name === tool.name),
        );
    },
  },
  subagents: {
    parent: { subagents: false },
    wider: { subagents: true },
    holds: capabilityHolds('subagents'),
  },
  teams: { parent: { teams: false }, wider: { teams: true }, holds: capabilityHolds('teams') },
  fetch: { parent: { fetch: false }, wider: { fetch: true }, holds: capabilityHolds('fetch') },
  childWorkspace: {
    parent: { childWorkspace: 'isolated' },
    wider: { childWorkspace: 'shared' },
    holds: (c, p) => {
      expect(c.config.childWorkspace).toBe(p.config.childWorkspace);
      expect(c.config.isolatedWorkspace).toBe(true);
    },
  },
  // A child's workspace is its parent's (or a copy of it), never a snapshot's it names.
  fromSnapshot: {
    parent: {},
    wider: { fromSnapshot: 'snap_elsewhere' },
    holds: (c) => expect(c.config.fromSnapshot).toBeUndefined(),
  },
  'egress.allow': {
    parent: { egress: { allow: [{ host: '127.0.0.2', ports: [8080], methods: ['GET'] }] } },
    wider: { egress: { allow: ANYWHERE } },
    holds: egressHolds,
  },
};

const shown = (request: CreateAgentRequest): Shown => {
  const { preset, mode, ...config } = request;
  return { preset: preset ?? 'standard', mode: mode ?? 'native', config };
};

describe('what a child inherits', () => {
  it('has a case here and a rule in inherit.ts for every field of the API schema', () => {
    const paths = fieldPaths(CreateAgent as unknown as v.GenericSchema);
    expect(Object.keys(CASES).sort()).toEqual([...paths].sort());
    const topLevel = new Set(paths.map((p) => p.split('.')[0]));
    for (const field of topLevel) expect(Object.keys(INHERITANCE), field).toContain(field);
  });

  it.each(Object.entries(CASES))(
    "%s: a child asking for more than its parent gets at most its parent's",
    (_f, c) => {
      const parent = shown(c.parent);
      const remoteTools = c.parent.remoteTools ?? [];
      const child = inheritRequest(
        {
          ...parent,
          preset: parent.preset as never,
          mode: parent.mode as never,
          remoteTools,
          planMode: false,
        },
        c.wider,
      );
      c.holds(shown(child), parent);
      // And asking for nothing gets exactly as much as the parent has.
      c.holds(
        shown(
          inheritRequest({
            ...parent,
            preset: parent.preset as never,
            mode: parent.mode as never,
            remoteTools,
            planMode: false,
          }),
        ),
        parent,
      );
    },
  );

  it.each(Object.entries(CASES))(
    '%s: every path to a child keeps it at least as restrictive',
    async (_f, c) => {
      api = await makeApi(
        {},
        {
          agents: {
            children: { providers: ['codex'], limits: { childrenPerAgent: 32, concurrentChildren: 32 } },
          },
        },
      );
      const a = api;
      const body = { subagents: true, teams: true, ...c.parent };
      const parentId = (await a.createAgent(a.keyA, body)).id;
      const get = async (id: string): Promise<Shown> =>
        (await a.request(a.keyA, 'GET', `/v1/agents/${id}`)).json;
      const parent = await get(parentId);
      const tools: string[] = (await a.request(a.keyA, 'GET', `/v1/agents/${parentId}/tools`)).json.tools.map(
        (t: { name: string }) => t.name,
      );
      const children: string[] = [];
      let n = 0;
      const spawnArgs = (tool: string) =>
        tool === 'spawn_teammate'
          ? { name: `mate${++n}`, description: 'd', prompt: 'p' }
          : { description: 'd', prompt: 'p', run_in_background: true };
      for (const tool of ['subagent', 'subagent_fork', 'subagent_codex', 'spawn_teammate']) {
        if (!tools.includes(tool)) continue;
        const tenantId = (await a.store.agents.byId(parentId))?.tenantId ?? '';
        const before = (await a.store.agents.children(tenantId, parentId)).length;
        const res = await a.call(a.keyA, parentId, [
          { id: `s${++n}`, name: tool, arguments: spawnArgs(tool) },
        ]);
        const result: Loose = res.json.results[0];
        if (result.ok) children.push(result.value.agent_id);
        // A spawn the parent's restrictions refuse makes no agent.
        else expect((await a.store.agents.children(tenantId, parentId)).length).toBe(before);
      }
      // The team service itself, as any tool that reaches it would (past the parent's own guards).
      const record = await a.store.agents.byId(parentId);
      const agent: Agent = await a.agents.get(record?.tenantId ?? '', parentId);
      const direct = [
        { role: 'child', context: 'fresh' },
        { role: 'child', context: 'fork' },
        ...(parent.config.teams === true
          ? [{ role: 'teammate', context: 'fresh', name: `mate${++n}` } as const]
          : []),
      ] as const;
      for (const how of direct) {
        const spawned = await a.agents
          .teams()
          .spawn(
            agent,
            { description: 'd', prompt: 'p', background: true, ...how },
            { callId: `d${++n}`, signal: new AbortController().signal },
          );
        children.push(spawned.agent_id);
      }
      expect(children.length).toBeGreaterThanOrEqual(direct.length);
      for (const id of children) c.holds(await get(id), parent);
    },
  );

  it('a parent in plan mode now (turned on by the client) makes its children in plan mode', async () => {
    api = await makeApi();
    const a = api;
    const parentId = (await a.createAgent(a.keyA, { subagents: true, teams: true })).id;
    const on = await a.request(a.keyA, 'PUT', `/v1/agents/${parentId}/plan-mode`, { planMode: true });
    expect(on.json).toEqual({ planMode: true });
    // Through its tools, plan mode refuses the spawn itself.
    const res = await a.call(a.keyA, parentId, [
      { id: 's1', name: 'subagent', arguments: { description: 'd', prompt: 'p', run_in_background: true } },
    ]);
    expect(res.json.results[0].error?.code).toBe('PLAN_MODE');
    // Any other way to the team service makes a child that starts in plan mode.
    const agent = await a.agents.get((await a.store.agents.byId(parentId))?.tenantId ?? '', parentId);
    for (const role of ['child', 'teammate'] as const) {
      const child = await a.agents.teams().spawn(
        agent,
        {
          description: 'd',
          prompt: 'p',
          background: true,
          context: 'fresh',
          role,
          ...(role === 'teammate' ? { name: 'mate' } : {}),
        },
        { callId: `d-${role}`, signal: new AbortController().signal },
      );
      const mode = await a.request(a.keyA, 'GET', `/v1/agents/${child.agent_id}/plan-mode`);
      expect(mode.json, role).toEqual({ planMode: true });
      const write = await a.call(a.keyA, child.agent_id, [
        { id: 'w', name: 'write', arguments: { file_path: 'x.md', content: 'x' } },
      ]);
      expect(write.json.results[0].error?.code, role).toBe('PLAN_MODE');
    }
  });

  it("a child's egress is its parent's, and a child's policy denies what its parent's does", async () => {
    api = await makeApi();
    const a = api;
    const allow = [{ host: '127.0.0.2', ports: [8080] }];
    const parentId = (
      await a.createAgent(a.keyA, {
        subagents: true,
        childWorkspace: 'isolated',
        fetch: true,
        egress: { allow },
        policy: { deny: ['bash'] },
      })
    ).id;
    const res = await a.call(a.keyA, parentId, [
      { id: 's1', name: 'subagent', arguments: { description: 'd', prompt: 'p', run_in_background: true } },
    ]);
    const childId = res.json.results[0].value.agent_id as string;
    const child = (await a.request(a.keyA, 'GET', `/v1/agents/${childId}`)).json;
    // The reported case: `egress: null` on a child of an agent narrowed to one host.
    expect(child.config.egress).toEqual({ allow });
    const bash = await a.call(a.keyA, childId, [
      { id: 'b', name: 'bash', arguments: { command: 'true', description: 'probe' } },
    ]);
    expect(bash.json.results[0].error?.code).toBe('DENIED');
  });
});

describe('egress allowlists intersect', () => {
  it('admits exactly what both lists admit', () => {
    const lists: EgressRule[][] = [
      [{ host: '*' }],
      [{ host: '*.example.com', ports: [443, 8080] }],
      [{ host: 'api.example.com', methods: ['GET', 'post'] }],
      [{ host: 'example.com' }, { host: '127.0.0.2', ports: [8080] }],
      [{ host: '*.api.example.com' }],
      [{ host: 'API.Example.com.', ports: [443], methods: ['GET'] }],
      [],
    ];
    const destinations = [
      ...PROBE_DESTINATIONS,
      { host: 'example.com', port: 80 },
      { host: 'x.api.example.com', port: 443, method: 'GET' },
      { host: 'api.example.com', port: 8080, method: 'POST' },
      { host: 'api.example.com', port: 443 },
      { host: 'other.org', port: 443, method: 'GET' },
    ];
    for (const x of lists)
      for (const y of lists) {
        const both = intersectRules(x, y);
        for (const to of destinations) {
          const admits = (rules: EgressRule[]) =>
            egressDecide([...ANYWHERE, { host: '*' }], canonicalRules(rules), to).kind === 'allow';
          expect(admits(both), `${JSON.stringify(x)} ∩ ${JSON.stringify(y)} at ${JSON.stringify(to)}`).toBe(
            admits(x) && admits(y),
          );
        }
      }
  });
});
