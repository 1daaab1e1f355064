// Creation: a cheap store write (the sandbox comes later, on first use), then the agent's tools are
// loaded once so that a bad config fails now, not at the first call: invalid remote tools or
// policy, a mode this service cannot serve. A refused agent is marked deleted again, never returned.
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import type { SandboxLimits } from '../../sandbox/types.ts';
import type { AgentLinks, AgentStore } from '../../store/index.ts';
import { DEFAULT_PRESET, defaultModeOf } from '../presets/index.ts';
import { checkLimits, sandboxLimits } from '../sandbox-limits.ts';
import type { Agent, CreateAgentRequest, RemoteToolSpec } from '../types.ts';
import type { LiveAgents } from './live.ts';
import { toAgent } from './records.ts';
import { latestByName } from './remote.ts';

export interface CreationOptions {
  agents: AgentStore;
  live: LiveAgents;
  /** The most a sandbox may ask for (the provider's maxima). */
  maxima: SandboxLimits | undefined;
  isClosing: () => boolean;
  /** Forgets a remembered agent (records.ts AgentLookup): a refused one is never answered. */
  forget?: (id: string) => void;
}

/** AgentService.create; with `links`, a child or teammate of another agent (teams/service.ts). */
export function createAgentCreation(
  options: CreationOptions,
): (tenantId: string, input: CreateAgentRequest, links?: AgentLinks) => Promise<Agent> {
  const { agents, live } = options;

  return async function create(tenantId, input, links) {
    if (options.isClosing())
      throw new SandboxError(
        'SHUTTING_DOWN',
        'The service is shutting down; create the agent after it restarts.',
      );
    const preset = input.preset ?? DEFAULT_PRESET;
    const { preset: _p, mode: _m, ...config } = input;
    checkLimits(sandboxLimits(input.sandbox), options.maxima);
    const agent = toAgent(
      agents.create({
        tenantId,
        preset,
        mode: input.mode ?? defaultModeOf(preset),
        config: config as JsonValue,
        remoteTools: latestByName(input.remoteTools ?? []) as unknown as JsonValue[],
        ...(links === undefined ? {} : { links }),
      }),
    );
    try {
      await live.of(agent).tools.describe();
    } catch (error) {
      agents.markDeleted(tenantId, agent.id);
      options.forget?.(agent.id);
      live.retire(agent.id);
      throw modeError(agent, error);
    }
    return agent;
  };
}

/**
 * What a child of `parent` is created from: the parent's preset, mode, restrictions, policy, sandbox
 * and code-mode budgets and its current remote tools, never more; a teammate is in team mode.
 */
export function childRequest(
  parent: Agent,
  remoteTools: RemoteToolSpec[],
  links: AgentLinks,
): CreateAgentRequest {
  const { restrict, policy, sandbox, codeMode, subagents, childWorkspace } = parent.config;
  return {
    preset: parent.preset,
    mode: parent.mode,
    ...(restrict === undefined ? {} : { restrict }),
    ...(policy === undefined ? {} : { policy }),
    ...(sandbox === undefined ? {} : { sandbox }),
    ...(codeMode === undefined ? {} : { codeMode }),
    ...(subagents === true ? { subagents: true } : {}),
    ...(links.role === 'teammate' ? { teams: true } : {}),
    ...(childWorkspace === undefined ? {} : { childWorkspace }),
    ...(childWorkspace === 'isolated' ? { isolatedWorkspace: true } : {}),
    ...(remoteTools.length === 0 ? {} : { remoteTools }),
  };
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
