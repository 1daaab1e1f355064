// The workspace browser: a directory's entries as links, a file's text (or its size when it is
// binary or large) and a download link. Names are text: hono/jsx escapes them.
import { h, type Node, table } from './layout.ts';

export interface DirEntryView {
  name: string;
  type: string;
  size: number;
}

const join = (dir: string, name: string): string =>
  dir === '.' || dir === '' ? name : `${dir.replace(/\/+$/, '')}/${name}`;

const parentOf = (path: string): string => {
  const i = path.replace(/\/+$/, '').lastIndexOf('/');
  return i <= 0 ? '.' : path.slice(0, i);
};

export const directoryView = (
  agentId: string,
  path: string,
  entries: DirEntryView[],
  truncated: boolean,
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
    table(
      ['name', 'type', 'bytes', ''],
      entries.map((e) =>
        h(
          'tr',
          null,
          h('td', null, h('a', { href: href(join(path, e.name)), class: 'entry' }, e.name)),
          h('td', null, e.type),
          h('td', null, String(e.size)),
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
        ),
      ),
    ),
    truncated ? h('p', { class: 'muted' }, 'Only the first entries are listed.') : null,
  ];
};

export const fileView = (agentId: string, path: string, text: string | undefined, bytes: number): Node[] => {
  const base = `/console/agents/${encodeURIComponent(agentId)}/files`;
  return [
    h(
      'p',
      null,
      'File ',
      h('code', null, path),
      ` (${bytes} bytes) · `,
      h('a', { href: `${base}/download?path=${encodeURIComponent(path)}` }, 'download'),
      ' · ',
      h('a', { href: `${base}?path=${encodeURIComponent(parentOf(path))}` }, 'up'),
    ),
    text === undefined
      ? h('p', { class: 'muted' }, 'Binary or large: download it to see it.')
      : h('pre', { class: 'file' }, text),
  ];
};
