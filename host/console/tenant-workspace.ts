// The tenant's changes to an agent's workspace and terminals (mounted by ./tenant.ts): upload a
// file into a directory and delete an entry (PUT and DELETE /v1/agents/:id/files), list the
// agent's terminals, open one and close one (/v1/agents/:id/terminals).
// Invariants: every change passes the CSRF check first and is a v1 request with the session's
// key; an upload is bounded by UPLOAD_BYTES before it is parsed (index.ts) and its name may not
// leave the directory it is put in; listing terminals starts the sandbox, so only this page does.
import { Hono } from 'hono';
import { type ApiFetch, apiJson, apiPost, apiRequest, failureOf } from './api.ts';
import { type ConsoleEnv, checkCsrf } from './guard.ts';
import { agentPath, key } from './tenant-agents.ts';
import { fieldOf } from './views/actions.ts';
import { join, parentOf } from './views/files.ts';
import { h, page } from './views/layout.ts';
import { type TerminalView, terminalsView } from './views/terminals.ts';

const filesPage = (id: string, path: string) =>
  `/console/agents/${encodeURIComponent(id)}/files?path=${encodeURIComponent(path)}`;

export const workspaceRoutes = (fetch: ApiFetch): Hono<ConsoleEnv> => {
  const app = new Hono<ConsoleEnv>();

  app.post('/console/agents/:id/files/upload', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const dir = fieldOf(form, 'dir') || '.';
    const file = form.file;
    if (!(file instanceof File)) return c.text('Choose a file to upload.', 400);
    const name = fieldOf(form, 'name') || file.name;
    // A name, not a path: the upload lands in the directory the page showed.
    if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name))
      return c.text('A file name may not be empty, "." or "..", nor hold "/", "\\" or NUL.', 400);
    const path = join(dir, name);
    const res = await apiRequest(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/files?path=${encodeURIComponent(path)}`,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body: file.stream(),
        duplex: 'half',
      } as RequestInit,
    );
    if (!res.ok) throw await failureOf(res);
    await res.body?.cancel();
    return c.redirect(filesPage(id, dir), 303);
  });

  app.post('/console/agents/:id/files/delete', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const path = fieldOf(form, 'path');
    const recursive = fieldOf(form, 'recursive') === 'true';
    const query = new URLSearchParams({ path, ...(recursive ? { recursive: 'true' } : {}) });
    const res = await apiRequest(fetch, c, key(c), `${agentPath(id)}/files?${query}`, { method: 'DELETE' });
    if (!res.ok) throw await failureOf(res);
    await res.body?.cancel();
    return c.redirect(filesPage(id, parentOf(path)), 303);
  });

  app.get('/console/agents/:id/terminals', async (c) => {
    const id = c.req.param('id');
    const { terminals } = await apiJson<{ terminals: TerminalView[] }>(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/terminals`,
    );
    const session = c.get('session');
    return c.html(
      await page(
        { title: `Terminals of ${id}`, session },
        h('p', null, h('a', { href: `/console/agents/${encodeURIComponent(id)}` }, 'back to the agent')),
        ...terminalsView(session, id, terminals),
      ),
    );
  });

  app.post('/console/agents/:id/terminals', async (c) => {
    const form = await checkCsrf(c);
    const id = c.req.param('id');
    const command = fieldOf(form, 'command');
    const name = fieldOf(form, 'name');
    const opened = await apiPost<TerminalView>(fetch, c, key(c), `${agentPath(id)}/terminals`, {
      // Words split on spaces: a program and its arguments (a shell line goes to `bash -c`).
      ...(command === '' ? {} : { command: command.split(/\s+/) }),
      ...(name === '' ? {} : { name }),
    });
    return c.redirect(
      `/console/agents/${encodeURIComponent(id)}/terminal?tid=${encodeURIComponent(opened.id)}`,
      303,
    );
  });

  app.post('/console/agents/:id/terminals/:tid/close', async (c) => {
    await checkCsrf(c);
    const id = c.req.param('id');
    const res = await apiRequest(
      fetch,
      c,
      key(c),
      `${agentPath(id)}/terminals/${encodeURIComponent(c.req.param('tid'))}`,
      { method: 'DELETE' },
    );
    if (!res.ok) throw await failureOf(res);
    await res.body?.cancel();
    return c.redirect(`/console/agents/${encodeURIComponent(id)}/terminals`, 303);
  });
  return app;
};
