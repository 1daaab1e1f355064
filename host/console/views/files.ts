// The workspace browser: a directory's entries as links, a file's text (or its size when it is
// binary or large) and a download link; an upload form into the directory and a delete button
// per entry. Names are text: hono/jsx escapes them.
import type { ConsoleSession } from '../sessions.ts';
import { bytesText } from './format.ts';
import { csrfField, h, type Node, table } from './layout.ts';

export interface DirEntryView {
  name: string;
  type: string;
  size: number;
}

export const join = (dir: string, name: string): string =>
  dir === '.' || dir === '' ? name : `${dir.replace(/\/+$/, '')}/${name}`;

export const parentOf = (path: string): string => {
  const i = path.replace(/\/+$/, '').lastIndexOf('/');
  return i <= 0 ? '.' : path.slice(0, i);
};

/** Delete one entry (a directory with its contents only when the box is ticked). */
const deleteForm = (session: ConsoleSession, base: string, path: string, directory: boolean): Node =>
  h(
    'form',
    { method: 'post', action: `${base}/delete`, class: 'inline delete' },
    csrfField(session),
    h('input', { type: 'hidden', name: 'path', value: path }),
    directory
      ? h(
          'label',
          null,
          h('input', { type: 'checkbox', name: 'recursive', value: 'true' }),
          ' with contents ',
        )
      : null,
    h('button', { type: 'submit', class: 'danger' }, 'delete'),
  );

/** Upload one file into the directory shown (at most `maxBytes`). */
const uploadForm = (session: ConsoleSession, base: string, dir: string, maxBytes: number): Node =>
  h(
    'form',
    {
      method: 'post',
      action: `${base}/upload`,
      enctype: 'multipart/form-data',
      class: 'action',
      id: 'upload',
    },
    csrfField(session),
    h('input', { type: 'hidden', name: 'dir', value: dir }),
    h(
      'label',
      null,
      `file (at most ${bytesText(maxBytes)})`,
      h('input', { type: 'file', name: 'file', required: true }),
    ),
    h('label', null, 'name (default: its own)', h('input', { type: 'text', name: 'name', size: 20 })),
    h('button', { type: 'submit' }, 'Upload'),
  );

export const directoryView = (
  session: ConsoleSession,
  agentId: string,
  path: string,
  entries: DirEntryView[],
  truncated: boolean,
  maxUploadBytes: number,
): (Node | null)[] => {
  const base = `/console/agents/${encodeURIComponent(agentId)}/files`;
  const href = (p: string) => `${base}?path=${encodeURIComponent(p)}`;
  return [
    h(
      'p',
      null,
      'Directory ',
      h('code', null, path),
      path === '.' ? null : [' · ', h('a', { href: href(parentOf(path)) }, 'up')],
    ),
    uploadForm(session, base, path, maxUploadBytes),
    table(
      ['name', 'type', 'size', '', ''],
      entries.map((e) =>
        h(
          'tr',
          { 'data-entry': e.name },
          h('td', null, h('a', { href: href(join(path, e.name)), class: 'entry' }, e.name)),
          h('td', null, e.type),
          h('td', { class: 'num' }, e.type === 'file' ? bytesText(e.size) : ''),
          h(
            'td',
            null,
            e.type === 'file'
              ? h(
                  'a',
                  { href: `${base}/download?path=${encodeURIComponent(join(path, e.name))}` },
                  'download',
                )
              : null,
          ),
          h('td', null, deleteForm(session, base, join(path, e.name), e.type === 'directory')),
        ),
      ),
    ),
    truncated ? h('p', { class: 'muted' }, 'Only the first entries are listed.') : null,
  ];
};

export const fileView = (
  session: ConsoleSession,
  agentId: string,
  path: string,
  text: string | undefined,
  bytes: number,
): Node[] => {
  const base = `/console/agents/${encodeURIComponent(agentId)}/files`;
  return [
    h(
      'p',
      null,
      'File ',
      h('code', null, path),
      ` (${bytesText(bytes)}) · `,
      h('a', { href: `${base}/download?path=${encodeURIComponent(path)}` }, 'download'),
      ' · ',
      h('a', { href: `${base}?path=${encodeURIComponent(parentOf(path))}` }, 'up'),
      ' · ',
      deleteForm(session, base, path, false),
    ),
    text === undefined
      ? h('p', { class: 'muted' }, 'Binary or large: download it to see it.')
      : h('pre', { class: 'file' }, text),
  ];
};
