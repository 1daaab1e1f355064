// The model-facing child-control and team tools (seed 000, names and arguments exactly as typed
// there), made per agent over the TeamService and registered in the agent's own layer when it is
// loaded (service/live.ts), because the Agent Teams composition replaces three of the child-control
// names with team-aware tools of other arguments. Which set an agent gets follows its config:
// `subagents` gives subagent, subagent_fork, the configured subagent_<provider> aliases,
// list_agents(scope?), send_message(subagent_id, …), interrupt_agent(agent_id); `teams` gives
// spawn_teammate (the lead only), list_agents(), send_message(target, …), followup_task,
// interrupt_agent(target), wait_agent; a child or teammate also gets report(output).
// Invariants: the preset's tier (it names `subagent`) and the agent's restrictions filter every
// name but report, which
// (as the seed says of a child's own reporting tools) survives filters over inherited capabilities.
import * as v from 'valibot';
import { admitsTool, presetEntry } from '../agents/presets/index.ts';
import type { Agent } from '../agents/types.ts';
import { defineTool } from '../tools/define.ts';
import type { ToolDefinition } from '../tools/types.ts';
import type { TeamService } from './service.ts';

const text = (min: number, max: number) => v.pipe(v.string(), v.minLength(min), v.maxLength(max));
const Description = text(1, 2000);
const Prompt = text(1, 1_000_000);
const Message = text(1, 1_000_000);
const Id = text(1, 128);
const anything = { schema: v.unknown() };

/** The seed's alias names for provider bundles: `subagent_<provider>`. */
export const aliasName = (provider: string): string => `subagent_${provider}`;

/** The providers that may have an alias (tool names are letters, digits, `_` and `-`). */
export const PROVIDER_NAME = /^[a-z][a-z0-9_]{0,31}$/;

function spawnTool(
  teams: TeamService,
  agent: Agent,
  name: string,
  description: string,
  fork: boolean,
  provider?: string,
): ToolDefinition {
  return defineTool({
    name,
    description,
    parameters: v.object({
      description: Description,
      prompt: Prompt,
      run_in_background: v.optional(v.boolean()),
    }),
    output: anything,
    execute: (args, exec) =>
      teams.spawn(
        agent,
        {
          description: args.description,
          prompt: args.prompt,
          background: args.run_in_background === true,
          context: fork ? 'fork' : 'fresh',
          role: 'child',
          ...(provider === undefined ? {} : { provider }),
        },
        { callId: exec.callId, signal: exec.signal },
      ),
  });
}

function childTools(teams: TeamService, agent: Agent, providers: readonly string[]): ToolDefinition[] {
  const background =
    'With run_in_background the call returns the child agent id at once and its outcome arrives later as an agent.child_finished event (and a message in your mailbox); otherwise the call waits for the child to report.';
  return [
    spawnTool(
      teams,
      agent,
      'subagent',
      `Start a delegated child agent (its own agent, session and tools, in your workspace) through the spawn provider, with the prompt as its task. ${background}`,
      false,
    ),
    spawnTool(
      teams,
      agent,
      'subagent_fork',
      `Start a child agent seeded from your durable conversation history (it can read your earlier messages with the session tools). ${background}`,
      true,
    ),
    ...providers.map((provider) =>
      spawnTool(
        teams,
        agent,
        aliasName(provider),
        `Start a delegated child agent run by the ${provider} product provider. ${background}`,
        false,
        provider,
      ),
    ),
  ];
}

function legacyTools(teams: TeamService, agent: Agent): ToolDefinition[] {
  return [
    defineTool({
      name: 'list_agents',
      description:
        'List your direct children (scope "children", the default) or all your descendants ("descendants"): id, description, status (running, completed, failed, cancelled), last output, whether calls of it run now, unread messages.',
      parameters: v.object({ scope: v.optional(v.picklist(['children', 'descendants'])) }),
      output: anything,
      isConcurrencySafe: () => true,
      isReadOnly: () => true,
      execute: async (args) => ({ agents: await teams.list(agent, args.scope ?? 'children') }),
    }),
    defineTool({
      name: 'send_message',
      description:
        'Send input to a continuable child (one of your descendants, by agent id): it is queued in its mailbox, and a child that finished is woken to continue with it.',
      parameters: v.object({ subagent_id: Id, message: Message }),
      output: anything,
      execute: (args, exec) =>
        teams.send(agent, args.subagent_id, args.message, {
          reach: 'children',
          kind: 'message',
          wake: true,
          callId: exec.callId,
        }),
    }),
    defineTool({
      name: 'interrupt_agent',
      description:
        "Interrupt a child agent (one of your descendants): its calls in flight are cancelled and its client is told (an agent.interrupted event on the child's log).",
      parameters: v.object({ agent_id: Id }),
      output: anything,
      execute: (args) => teams.interrupt(agent, args.agent_id, 'children'),
    }),
  ];
}

const Target = v.pipe(Id, v.description('A teammate name, "lead", or an agent id'));

/** send_message(target, message) queues; followup_task(target, message) also wakes an idle target. */
function teamMessageTool(
  teams: TeamService,
  agent: Agent,
  name: string,
  description: string,
  kind: 'message' | 'followup',
): ToolDefinition {
  return defineTool({
    name,
    description,
    parameters: v.object({ target: Target, message: Message }),
    output: anything,
    execute: (args, exec) =>
      teams.send(agent, args.target, args.message, {
        reach: 'team',
        kind,
        wake: kind === 'followup',
        callId: exec.callId,
      }),
  });
}

function teamTools(teams: TeamService, agent: Agent): ToolDefinition[] {
  const lead = agent.links?.role !== 'teammate';
  return [
    ...(lead
      ? [
          defineTool({
            name: 'spawn_teammate',
            description:
              'Start a durable teammate: an agent of its own (own session and tools, in your workspace) that joins your team under `name` and works on `prompt` in the background. context "fork" seeds it with your conversation. Reach it with send_message and followup_task.',
            parameters: v.object({
              name: text(1, 64),
              description: Description,
              prompt: Prompt,
              context: v.optional(v.picklist(['fresh', 'fork'])),
            }),
            output: anything,
            execute: (args, exec) =>
              teams.spawn(
                agent,
                {
                  description: args.description,
                  prompt: args.prompt,
                  background: true,
                  context: args.context ?? 'fresh',
                  role: 'teammate',
                  name: args.name,
                },
                { callId: exec.callId, signal: exec.signal },
              ),
          }),
        ]
      : []),
    defineTool({
      name: 'list_agents',
      description:
        'List your team: the lead and the teammates (name, id, description, status, whether calls of it run now, unread messages), and your own children.',
      parameters: v.object({}),
      output: anything,
      isConcurrencySafe: () => true,
      isReadOnly: () => true,
      execute: async () => ({ agents: await teams.list(agent, 'team') }),
    }),
    teamMessageTool(
      teams,
      agent,
      'send_message',
      "Queue a message in a team member's mailbox without necessarily waking it (it reads it with wait_agent or at its next turn).",
      'message',
    ),
    teamMessageTool(
      teams,
      agent,
      'followup_task',
      'Send a follow-up task to a team member and wake it if it is idle (its client is asked to run a new turn with it).',
      'followup',
    ),
    defineTool({
      name: 'interrupt_agent',
      description:
        'Interrupt a teammate: its calls in flight are cancelled and its client is told (an agent.interrupted event on its log).',
      parameters: v.object({ target: Target }),
      output: anything,
      execute: (args) => teams.interrupt(agent, args.target, 'team'),
    }),
    defineTool({
      name: 'wait_agent',
      description:
        "Wait for team or mailbox progress: returns the messages in your mailbox (teammates' messages, follow-ups, children's reports) as soon as there is one, or an empty list with timed_out after timeout_ms (default and most: the tenant's wait limit).",
      parameters: v.object({
        timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(86_400_000))),
      }),
      output: anything,
      isConcurrencySafe: () => true,
      isReadOnly: () => true,
      execute: (args, exec) => teams.wait(agent, args.timeout_ms, exec.signal),
    }),
  ];
}

function reportTool(teams: TeamService, agent: Agent): ToolDefinition {
  return defineTool({
    name: 'report',
    description:
      'Report your output to the agent that started you: it becomes your result for it (a call waiting on you returns it). You may be given more work afterwards.',
    parameters: v.object({ output: text(1, 1_000_000) }),
    output: anything,
    execute: (args) => teams.report(agent, args.output),
  });
}

/** Whether the agent's restriction leaves `name` visible. */
function restrictionAdmits(agent: Agent, name: string): boolean {
  const restrict = agent.config.restrict;
  if (restrict === undefined) return true;
  return 'allow' in restrict ? restrict.allow.includes(name) : !restrict.deny.includes(name);
}

/** The child-control and team tools this agent gets, by its config, preset and restrictions. */
export function teamToolsFor(
  teams: TeamService,
  agent: Agent,
  providers: readonly string[],
): ToolDefinition[] {
  const { subagents, teams: teamMode } = agent.config;
  const chosen: ToolDefinition[] = [];
  if (subagents === true) chosen.push(...childTools(teams, agent, providers));
  if (teamMode === true) chosen.push(...teamTools(teams, agent));
  else if (subagents === true) chosen.push(...legacyTools(teams, agent));
  // The preset's tier: presets that name `subagent` carry the whole child-control set.
  const tier = admitsTool(presetEntry(agent.preset), 'subagent');
  const admitted = chosen.filter((tool) => tier && restrictionAdmits(agent, tool.name));
  return agent.links === undefined ? admitted : [...admitted, reportTool(teams, agent)];
}
