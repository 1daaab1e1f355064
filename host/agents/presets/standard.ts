// The standard preset: the normal full coding-agent surface, as native tools.
import { definePreset } from './define.ts';

export const standard = definePreset({
  name: 'standard',
  defaultMode: 'native',
  admits: {
    allow: [
      'bash',
      'read',
      'read_image',
      'write',
      'edit',
      'glob',
      'grep',
      'job_list',
      'job_output',
      'job_kill',
      // Installed only where the sandbox runs programs on pipes (the Docker provider): host/tools/builtin/lsp.
      'lsp',
      // Session state and questions (seed 000): host/tools/builtin/session.ts.
      'ask_user_question',
      'todo_write',
      'create_goal',
      'get_goal',
      'update_goal',
      'exit_plan_mode',
      // Installed with the durable store (its search index and schedules).
      'schedule_create',
      'schedule_list',
      'schedule_delete',
      'session_event_read',
      'session_event_search',
      'session_event_trace',
      'session_search',
      'session_trace',
      // Installed with the durable store's skill catalogs; each tenant's lists its own skills.
      'skill',
      // Installed only with an isolate host, and offered only to agents created with `subagents: true`.
      'workflow',
      'ralph',
      // Installed with the egress gateway: web_search where the tenant has a search provider;
      // web_fetch only for agents created with `fetch: true` (the seed's standard preset has fetch: false).
      'web_search',
      'web_fetch',
      // Installed with the durable store, and offered only to agents created with `teams: true`.
      'team_task_create',
      'team_task_get',
      'team_task_list',
      'team_task_update',
      // Registered per agent (host/teams/tools.ts) by its `subagents` and `teams` config;
      // naming `subagent` puts the whole child-control tier (aliases and team tools too) here.
      'subagent',
      'subagent_fork',
      'list_agents',
      'send_message',
      'interrupt_agent',
      'spawn_teammate',
      'followup_task',
      'wait_agent',
      'report',
      // Installed with the data directory, and offered only where the tenant's settings say
      // `checkpoints.tools: true` (host/agents/checkpoints/tools.ts).
      'checkpoint',
      'rollback',
    ],
  },
  adds: [],
});
