// The agent service: create/get/list/delete agents per tenant, what each agent's model sees, and
// its call batches through the one pipeline. This module wires the parts in ./service/, one
// concern each: records (store rows as Agents, which agents are gone), create (creation and its
// checks), live (loading an agent's tool scope from its record, cached per process), remote (its
// remote tools, kept in the agents table), sandbox (lazy sandbox binding), batches (calls, their
// aborts and the shutdown grace) and deletion (delete, reaping, deletion listeners).
// A restart loses nothing: agents and their remote tools live in store.agents (registrations are
// also logged, `agent.remote_tools`), sandboxes in the provider (re-adopted by agent id).
// Sandboxes are created lazily, when the first tool or file transfer needs one, so creating an
// agent is a cheap store write and agents that only use remote tools never hold a container.
// With `plugins`, the agent's creator plugins (./plugins/host.ts) run beside it: their tools join
// its scope, deleting the agent removes them, and resumePlugins() starts those that were running.
// With `store.teams`, agents created with `subagents` or `teams` make children and teammates:
// agents of their own, linked to their parent (./teams/). Deleting an agent deletes its
// descendants with it, each marked deleted before anything is awaited (fail closed: no child
// outlives its parent, none keeps working in a workspace about to be destroyed).
// The parts are wired from service/parts.ts (those that reach each other late) over one state
// (service/state.ts, which also deletes, appends messages and closes); service/types.ts holds the shapes.
// Pauses (service/pause.ts): an agent's sandbox stopped or frozen with its workspace kept, the pause
// in its record; a call resumes it or is refused (AGENT_PAUSED) as its tenant's settings say.
// Invariants: another tenant's agent reads as NOT_FOUND; results come back in call order; once
// delete() has marked an agent deleted nothing runs for it any more (service/deletion.ts).

import { SandboxError } from '../errors.ts';
import { createRegistryRuntime } from './runtime.ts';
import { createBatches } from './service/batches.ts';
import { createAgentCreation } from './service/create.ts';
import { createMcpServerService } from './service/mcp.ts';
import {
  checkpointsOf,
  deletionFor,
  liveAgentsFor,
  pausesFor,
  pluginHostFor,
  snapshotsFor,
  teamServiceFor,
} from './service/parts.ts';
import { createAgentLookup, createDeletionMarks, toAgent } from './service/records.ts';
import { createRemoteRegistration } from './service/remote.ts';
import { createSandboxBinding } from './service/sandbox.ts';
import { type AgentServiceState, appendMessages, closeService, removeAgent } from './service/state.ts';
import type { AgentService, AgentServiceOptions } from './service/types.ts';
import { createAgentUsage } from './service/usage.ts';
import { createTenantSettings } from './tenant-settings.ts';
import type { Agent, CreateAgentRequest } from './types.ts';

export type { AgentService, AgentServiceOptions } from './service/types.ts';

/** Replicas: this process's work for the agents stops (their family runs on another replica now). */
async function releaseAgents(state: AgentServiceState, tenantId: string, agentIds: readonly string[]) {
  await Promise.all(
    agentIds.map(async (id) => {
      // Aborted first, so its calls end OWNER_FENCED rather than DENIED by the retired scope.
      state.batches.abortMoved(id);
      state.live.retire(id);
      state.lookup.forget(id);
      state.pauses.forget([id]);
      await state.sandboxes.release(id);
      await state.plugins?.releaseAgent(tenantId, id);
      // Checkpoints stay with the replica that took them (their index and blobs are files of its
      // data directory): the new owner starts with none, and this copy, which the new owner's
      // calls no longer keep true, is dropped (snapshot checkpoints' files with it).
      await state.options.checkpoints?.forget(id).catch(() => undefined);
    }),
  );
}

/** AgentService.create: from a snapshot, the copy is made now, so a snapshot deleted later changes nothing. */
async function createAgent(
  state: AgentServiceState,
  tenantId: string,
  input: CreateAgentRequest,
): Promise<Agent> {
  const agent = await state.create(tenantId, input);
  if (agent.config.fromSnapshot !== undefined)
    await state.sandboxes.of(agent).catch(async (e: unknown) => {
      await removeAgent(state, tenantId, agent.id).catch(() => undefined);
      throw e;
    });
  return agent;
}

export function createAgentService(options: AgentServiceOptions): AgentService {
  const { store, sandboxes: provider } = options;
  const runtime = options.runtime ?? (options.registry ? createRegistryRuntime(options.registry) : undefined);
  if (runtime === undefined)
    throw new SandboxError('CONFIG_INVALID', 'createAgentService needs a registry (or a runtime).');
  const marks = createDeletionMarks(store.agents);
  const lookup = createAgentLookup(store.agents, marks);
  const binding = { provider, agents: store.agents, snapshots: store.snapshots, marks };
  const sandboxes = createSandboxBinding({ ...binding, beforeBind: (agent) => state.pauses.admit(agent) });
  // The parts below are filled in, in this order, before anything reads them (service/state.ts).
  const state = {
    options,
    store,
    provider,
    closing: false,
    isClosing: () => state.closing,
    marks,
    lookup,
    sandboxes,
    plugins: undefined,
    teams: undefined,
  } as AgentServiceState;
  state.live = liveAgentsFor(state, runtime);
  state.plugins = pluginHostFor(state);
  state.batches = createBatches({
    events: store.events,
    live: state.live,
    marks,
    isClosing: state.isClosing,
    ...(options.observe ? { observe: options.observe } : {}),
  });
  state.deletion = deletionFor(state);
  state.settings = createTenantSettings(store.tenantSettings);
  state.pauses = pausesFor(state);
  const snapshots = snapshotsFor(state);
  state.create = createAgentCreation({
    agents: store.agents,
    live: state.live,
    maxima: provider.maxima,
    isClosing: state.isClosing,
    forget: lookup.forget,
    deleting: marks.deleting,
    provider,
    ...(options.runtimes === undefined ? {} : { runtimes: options.runtimes }),
    snapshots,
    ...(options.admitWorkspace === undefined ? {} : { admitWorkspace: options.admitWorkspace }),
  });
  state.teams = teamServiceFor(state);
  // In the background: a run it cannot resume now stays as stored, for the next start. With
  // replicas, the replica taking a family over resumes its runs (options.children.resumeAtStart).
  if (options.children?.resumeAtStart !== false) void state.teams?.resume().catch(() => undefined);
  const { live, batches, deletion, pauses } = state;

  return {
    create: (tenantId, input) => createAgent(state, tenantId, input),
    get: lookup.get,
    list: async (tenantId) => (await store.agents.list(tenantId)).map(toAgent),
    delete: (tenantId, id) => removeAgent(state, tenantId, id),
    appendMessages: (agent, messages) => appendMessages(state, agent, messages),
    teams() {
      if (state.teams === undefined)
        throw new SandboxError('NOT_FOUND', 'This service keeps no child agents (its store has no teams).');
      return state.teams;
    },
    reapDeleted: deletion.reapDeleted,
    onDeleted: deletion.onDeleted,
    async tools(agent) {
      await state.plugins?.ready(agent.id);
      return { mode: agent.mode, tools: await (await live.of(agent)).tools.describe() };
    },
    async step(agent) {
      // As tools(): after a restart, the step waits for the agent's running plugins (their tools).
      await state.plugins?.ready(agent.id);
      const { id, expiresAt, tools } = await (await live.of(agent)).tools.step();
      return { stepId: id, expiresAt, mode: agent.mode, tools };
    },
    session: async (agent) => (await live.of(agent)).session,
    async call(agent, calls, callOptions) {
      // After a restart, an agent's calls wait until its running plugins are back (their tools with them).
      await state.plugins?.ready(agent.id);
      await pauses.admit(agent);
      return batches.call(agent, calls, callOptions);
    },
    sandbox: sandboxes.of,
    async plugins(agent) {
      const { plugins } = state;
      if (plugins === undefined)
        throw new SandboxError('NOT_FOUND', 'This service runs no plugins (it has no isolate host).');
      await live.of(agent); // NOT_FOUND once the agent is gone
      return plugins.of(agent);
    },
    resumePlugins: (onError, agentIds) => state.plugins?.resume(onError, agentIds) ?? Promise.resolve(0),
    release: (tenantId, agentIds) => releaseAgents(state, tenantId, agentIds),
    registerRemoteTools: createRemoteRegistration({
      agents: store.agents,
      events: store.events,
      remoteOf: async (agent) => (await live.of(agent)).remote,
    }),
    mcpServers: createMcpServerService({
      events: store.events,
      mcpOf: async (agent) => (await live.of(agent)).mcp,
      ...(options.mcpLimitsOf ? { limitsOf: options.mcpLimitsOf } : {}),
      remote: options.egress !== undefined,
    }),
    usage: createAgentUsage({ agents: store.agents, provider, sandboxes, batches, pauses }),
    pause: async (tenantId, id, mode) => pauses.pause(await lookup.get(tenantId, id), mode),
    resume: async (tenantId, id) => pauses.resume(await lookup.get(tenantId, id)),
    settings: state.settings,
    checkpoints: (agent) => checkpointsOf(state, agent),
    checkpointBytes: async (tenantId) => state.options.checkpoints?.tenantBytes(tenantId),
    snapshots,
    liveSandboxes: sandboxes.size,
    inFlight: batches.size,
    close: (graceMs) => closeService(state, graceMs),
  };
}
