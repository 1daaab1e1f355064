// Creation: a cheap store write (the sandbox comes later, on first use), then the agent's tools are
// loaded once so that a bad config fails now, not at the first call: invalid remote tools or
// policy, a mode this service cannot serve. A refused agent is marked deleted again, never returned.
// An agent made with links (a child or teammate) is made from its parent's settings narrowed by
// what it asks for (../inherit.ts), here, whatever path made it: no child gets more than its parent.
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import type { SandboxLimits, SandboxProvider } from '../../sandbox/types.ts';
import type { AgentLinks, AgentStore } from '../../store/index.ts';
import { inheritRequest } from '../inherit.ts';
import { DEFAULT_PRESET, defaultModeOf } from '../presets/index.ts';
import { checkLimits, sandboxLimits } from '../sandbox-limits.ts';
import { checkRuntime, defaultOnly, type RuntimeAccess } from '../sandbox-runtime.ts';
import type { Agent, CreateAgentRequest } from '../types.ts';
import type { LiveAgents } from './live.ts';
import { deletedError, remoteToolsOf, toAgent } from './records.ts';
import { latestByName } from './remote.ts';
import type { AgentSnapshots } from './snapshots.ts';
import type { AgentServiceOptions } from './types.ts';

export interface CreationOptions {
  agents: AgentStore;
  live: LiveAgents;
  /** The most a sandbox may ask for (the provider's maxima). */
  maxima: SandboxLimits | undefined;
  isClosing: () => boolean;
  /** Forgets a remembered agent (records.ts AgentLookup): a refused one is never answered. */
  forget?: (id: string) => void;
  /** The provider, asked which runtimes its engine offers. */
  provider: SandboxProvider;
  /** The runtimes each tenant may ask for besides runc. Default: none. */
  runtimes?: RuntimeAccess;
  /** The tenant's snapshots an agent may start from (`fromSnapshot`). */
  snapshots?: Pick<AgentSnapshots, 'source'>;
  /** A child with a workspace of its own, held to its tenant's disk quota (AgentServiceOptions). */
  admitWorkspace?: AgentServiceOptions['admitWorkspace'];
  /** The agents being deleted in this process (records.ts DeletionMarks). */
  deleting?: ReadonlySet<string>;
}

const MIB = 1024 * 1024;

/** A request that starts from a snapshot, its disk limit the snapshot's (another one asked: refused). */
async function fromSnapshot(
  snapshots: Pick<AgentSnapshots, 'source'> | undefined,
  tenantId: string,
  request: CreateAgentRequest,
): Promise<CreateAgentRequest> {
  const id = request.fromSnapshot as string;
  if (snapshots === undefined)
    throw new SandboxError('SNAPSHOT_UNSUPPORTED', 'This service keeps no snapshots.');
  const { sizeBytes } = await snapshots.source(tenantId, id);
  const diskMb = Math.ceil(sizeBytes / MIB);
  const asked = request.sandbox?.diskMb;
  if (asked !== undefined && asked !== diskMb)
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `An agent made from snapshot ${id} has its disk size (${diskMb} MiB); leave sandbox.diskMb out.`,
      { data: { snapshotId: id, diskMb } },
    );
  return { ...request, sandbox: { ...request.sandbox, diskMb } };
}

/** AgentService.create; with `links`, a child or teammate of another agent (teams/service.ts). */
export function createAgentCreation(
  options: CreationOptions,
): (tenantId: string, input: CreateAgentRequest, links?: AgentLinks) => Promise<Agent> {
  const { agents, live } = options;

  /** What a child asks for, narrowed to its parent as the parent is now (gone: NOT_FOUND). */
  async function inherited(
    tenantId: string,
    asked: CreateAgentRequest,
    links: AgentLinks,
  ): Promise<CreateAgentRequest> {
    const record = await agents.get(tenantId, links.parentId);
    if (record === undefined) throw deletedError(links.parentId);
    const parent = toAgent(record);
    const { session } = await live.of(parent);
    return inheritRequest(
      {
        preset: parent.preset,
        mode: parent.mode,
        config: parent.config,
        remoteTools: remoteToolsOf(record),
        planMode: session.planMode(),
      },
      asked,
    );
  }

  return async function create(tenantId, input, links) {
    if (options.isClosing())
      throw new SandboxError(
        'SHUTTING_DOWN',
        'The service is shutting down; create the agent after it restarts.',
      );
    const asked = links === undefined ? input : await inherited(tenantId, input, links);
    const request =
      asked.fromSnapshot === undefined ? asked : await fromSnapshot(options.snapshots, tenantId, asked);
    const preset = request.preset ?? DEFAULT_PRESET;
    const { preset: _p, mode: _m, ...config } = request;
    checkLimits(sandboxLimits(request.sandbox), options.maxima);
    await checkRuntime(request.sandbox?.runtime, tenantId, options.runtimes ?? defaultOnly, options.provider);
    const store = () =>
      agents.create({
        tenantId,
        preset,
        mode: request.mode ?? defaultModeOf(preset),
        config: config as JsonValue,
        remoteTools: latestByName(request.remoteTools ?? []) as unknown as JsonValue[],
        ...(links === undefined ? {} : { links }),
      });
    // A top-level agent's workspace is admitted by the API's quota (POST /v1/agents); a child's
    // here, its check and its row in one turn of its tenant's creates (so none made at once passes it).
    const admit =
      links !== undefined && request.isolatedWorkspace === true ? options.admitWorkspace : undefined;
    const agent = toAgent(
      await (admit === undefined ? store() : admit(tenantId, request.sandbox?.diskMb, store)),
    );
    const undo = async (): Promise<void> => {
      await agents.markDeleted(tenantId, agent.id);
      options.forget?.(agent.id);
      live.retire(agent.id);
    };
    try {
      await (await live.of(agent)).tools.describe();
    } catch (error) {
      await undo();
      throw modeError(agent, error);
    }
    // A parent deleted while its child was being made: its deletion may have listed the family
    // before this row was stored, so the child goes again here (state.ts removeAgent lists the
    // family once more after the parent's stamp: whichever comes second sees the other).
    if (links !== undefined && (await parentGone(tenantId, links.parentId))) {
      await undo();
      throw deletedError(links.parentId);
    }
    return agent;
  };

  async function parentGone(tenantId: string, parentId: string): Promise<boolean> {
    return options.deleting?.has(parentId) === true || (await agents.get(tenantId, parentId)) === undefined;
  }
}

/** A mode that needs code mode, on a service started without it, is the client's mistake. */
function modeError(agent: Agent, error: unknown): unknown {
  if (!isSandboxError(error) || error.code !== 'NO_EXECUTOR') return error;
  return new SandboxError(
    'BAD_REQUEST',
    `Mode ${agent.mode} needs code mode (run_code), which this service was started without; use mode "native".`,
    { cause: error },
  );
}
