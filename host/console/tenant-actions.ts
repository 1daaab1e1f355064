// The tenant's actions on agents (mounted by ./tenant.ts): create one (preset, mode, limits) and
// delete one, the live state of the list and the usage of one as JSON for assets/refresh.js, and
// the run page (a command through POST …/exec, a tool call through POST …/calls, its result shown).
// Every change is a v1 request with the session's key after the CSRF check; the API validates.
// Invariant: nothing here starts a sandbox unless the person asked for a run.
import { type Context, Hono } from 'hono';
import { type ApiFetch, apiJson, apiPost, apiRequest, failureOf } from './api.ts';
import { type ConsoleEnv, checkCsrf } from './guard.ts';
import { agentPath, key } from './tenant-agents.ts';
import {
  type CallResultView,
  callResult,
  createAgentBody,
  type ExecView,
  execResult,
  fieldOf,
  runForms,
} from './views/actions.ts';
import { type UsageView, usageCells } from './views/agent.ts';
import { type AgentView, lastCallText, stateText } from './views/agents.ts';
import { h, page } from './views/layout.ts';

/** The agent's tool names, for the run page's select. */
const toolNames = async (fetch: ApiFetch, c: Context<ConsoleEnv>, id: string): Promise<string[]> => {
  const { tools } = await apiJson<{ tools: { name: string }[] }>(fetch, c, key(c), `${agentPath(id)}/tools`);
  return tools.map((t) => t.name);
};

const runPage = async (
  fetch: ApiFetch,
  c: Context<ConsoleEnv>,
  id: string,
  last: Parameters<typeof runForms>[3],
  result?: ReturnType<typeof execResult>,
) =>
  c.html(
    await page(
      { title: `Run in ${id}`, session: c.get('session') },
      h('p', null, h('a', { href: `/console/agents/${encodeURIComponent(id)}` }, 'back to the agent')),
      result ?? null,
      ...runForms(c.get('session'), id, await toolNames(fetch, c, id), last),
    ),
  );

export const actionRoutes = (fetch: ApiFetch): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();

  // The list's state for assets/refresh.js: memory only on the API's side (no Docker call).
  app.get('/console/agents.json', async (c) => {
    const { agents } = await apiJson<{ agents: AgentView[] }>(fetch, c, key(c), '/v1/agents');
    return c.json({
      agents: agents.map((a) => ({
        id: a.id,
        sandbox: a.state?.sandbox ?? '',
        state: stateText(a.state),
        lastCall: lastCallText(a.state),
      })),
    });
  });

  app.post('/console/agents', async (c) => {
    const form = await checkCsrf(c);
    const agent = await apiPost<AgentView>(fetch, c, key(c), '/v1/agents', createAgentBody(form));
    return c.redirect(`/console/agents/${encodeURIComponent(agent.id)}`, 303);
  });

  app.post('/console/agents/:id/delete', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    // The checkbox is required by the form; a post without it (a script's) deletes nothing.
    if (fieldOf(form, 'confirm') !== 'yes')
      return c.redirect(`/console/agents/${encodeURIComponent(id)}`, 303);
    const res = await apiRequest(fetch, c, key(c), agentPath(id), { method: 'DELETE' });
    if (!res.ok) throw await failureOf(res);
    await res.body?.cancel();
    return c.redirect('/console/agents', 303);
  });

  app.get('/console/agents/:id/usage.json', async (c) => {
    const usage = await apiJson<UsageView>(fetch, c, key(c), `${agentPath(c.req.param('id'))}/usage`);
    return c.json({ sandbox: usage.state.sandbox, cells: usageCells(usage) });
  });

  app.get('/console/agents/:id/run', (c) => runPage(fetch, c, c.req.param('id'), {}));

  app.post('/console/agents/:id/run/exec', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const command = typeof form.command === 'string' ? form.command : '';
    const cwd = fieldOf(form, 'cwd');
    const timeout = fieldOf(form, 'timeoutMs');
    const result = await apiPost<ExecView>(fetch, c, key(c), `${agentPath(id)}/exec`, {
      command,
      ...(cwd === '' ? {} : { cwd }),
      ...(timeout === '' ? {} : { timeoutMs: Number(timeout) }),
    });
    return runPage(fetch, c, id, { command }, execResult(result));
  });

  app.post('/console/agents/:id/run/call', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const name = fieldOf(form, 'name');
    const args = typeof form.arguments === 'string' ? form.arguments : '{}';
    let parsed: unknown;
    try {
      parsed = JSON.parse(args.trim() === '' ? '{}' : args);
    } catch {
      return runPage(
        fetch,
        c,
        id,
        { tool: name, args },
        h('p', { role: 'alert' }, 'The arguments are not JSON.'),
      );
    }
    const { results } = await apiPost<{ results: CallResultView[] }>(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/calls`,
      {
        calls: [{ id: `console-${Date.now().toString(36)}`, name, arguments: parsed }],
      },
    );
    const first = results[0] ?? { ok: false, error: { message: 'The API answered no result.' } };
    return runPage(fetch, c, id, { tool: name, args }, callResult(first));
  });
  return app;
};
