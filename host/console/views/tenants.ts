// The operator's tenant views: the create-tenant form, a key shown once, one tenant's keys (issue
// and revoke) and its agents that have a sandbox. Names and ids are text: hono/jsx escapes them.
import type { ConsoleSession } from '../sessions.ts';
import { usedText } from './agents.ts';
import { csrfField, h, type Node, table, when } from './layout.ts';

/** A key as GET /v1/tenants/:id/keys lists it. */
export interface KeyView {
  id: string;
  prefix: string;
  createdAt: number;
  name?: string;
  expiresAt?: number;
  revokedAt?: number;
}

/** One of GET /v1/admin/workspaces' rows. */
export interface WorkspaceView {
  tenantId: string;
  agentId: string;
  disk?: { usedBytes: number; limitBytes: number };
}

export const createTenantForm = (session: ConsoleSession): Node =>
  h(
    'form',
    { method: 'post', action: '/console/operator/tenants', class: 'action', id: 'create-tenant' },
    csrfField(session),
    h('label', null, 'name', h('input', { type: 'text', name: 'name', required: true, size: 24 })),
    h('button', { type: 'submit' }, 'Create tenant'),
  );

/** A new key, shown this once: the API keeps only its hash. */
export const keyOnce = (apiKey: string, what: string): Node =>
  h(
    'div',
    { class: 'notice', id: 'new-key' },
    h('p', null, `${what} Copy the key now: it is shown only this once.`),
    h('p', { class: 'secret' }, apiKey),
  );

const keyState = (k: KeyView, now: number): string =>
  k.revokedAt !== undefined
    ? `revoked ${when(k.revokedAt)}`
    : k.expiresAt !== undefined && k.expiresAt <= now
      ? `expired ${when(k.expiresAt)}`
      : k.expiresAt !== undefined
        ? `live until ${when(k.expiresAt)}`
        : 'live';

export const keysView = (session: ConsoleSession, tenantId: string, keys: KeyView[], now: number): Node[] => {
  const base = `/console/operator/tenants/${encodeURIComponent(tenantId)}/keys`;
  return [
    h('h2', null, 'Keys'),
    h(
      'form',
      { method: 'post', action: base, class: 'action', id: 'issue-key' },
      csrfField(session),
      h('label', null, 'name (optional)', h('input', { type: 'text', name: 'name', size: 20 })),
      h(
        'label',
        null,
        'expires in days (optional)',
        h('input', { type: 'number', name: 'days', min: 1, size: 6, placeholder: 'never' }),
      ),
      h('button', { type: 'submit' }, 'Issue key'),
    ),
    table(
      ['key', 'name', 'created', 'state', ''],
      keys.map((k) =>
        h(
          'tr',
          { 'data-key': k.id },
          h('td', null, h('code', null, `${k.prefix}…`)),
          h('td', null, k.name ?? ''),
          h('td', null, when(k.createdAt)),
          h('td', null, keyState(k, now)),
          h(
            'td',
            null,
            k.revokedAt === undefined
              ? h(
                  'form',
                  { method: 'post', action: `${base}/${encodeURIComponent(k.id)}/revoke`, class: 'inline' },
                  csrfField(session),
                  h('button', { type: 'submit', class: 'danger' }, 'Revoke'),
                )
              : null,
          ),
        ),
      ),
    ),
  ];
};

/** One agent of a tenant as GET /v1/tenants/:id/agents lists it (what the page shows of it). */
export interface TenantAgentView {
  id: string;
  preset: string;
  mode: string;
  parentId?: string;
  state?: { sandbox?: string };
}

/** Every agent of the tenant, with the disk of those whose workspace the page read. */
export const tenantAgentsView = (
  agents: TenantAgentView[],
  workspaces: WorkspaceView[],
  complete: boolean,
): (Node | null)[] => {
  const disk = new Map(workspaces.map((w) => [w.agentId, w.disk]));
  return [
    h('h2', null, `Agents (${agents.length})`),
    agents.length === 0
      ? h('p', { class: 'muted', id: 'no-tenant-agents' }, 'None.')
      : table(
          ['agent', 'preset', 'mode', 'parent', 'sandbox', 'disk'],
          agents.map((a) =>
            h(
              'tr',
              { 'data-agent': a.id },
              h('td', null, a.id),
              h('td', null, a.preset),
              h('td', null, a.mode),
              h('td', null, a.parentId ?? ''),
              h('td', null, a.state?.sandbox ?? ''),
              h('td', null, disk.has(a.id) ? usedText(disk.get(a.id)) : ''),
            ),
          ),
        ),
    complete
      ? null
      : h('p', { class: 'muted' }, 'Disk: only the first of the service’s workspaces were read.'),
  ];
};
