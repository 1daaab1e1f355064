// Applying a validated upload (tar.ts) to a sandbox's files, all or nothing. Three steps:
// 1. check: the whole archive against itself and against the tree as it is (a file where a
//    directory must go, or a directory where a file must go, is refused before anything is written);
// 2. stage: every file's content is written into a fresh hidden directory inside the target, so a
//    failure while writing (the disk fills, the sandbox goes away) leaves the visible tree untouched;
// 3. commit: directories are created and staged files renamed into place, each replaced file first
//    moved aside into the stage; if any step fails, everything done is undone in reverse order.
// Invariants: when extractEntries throws, the tree holds what it held before (bar the agent's own
// concurrent changes); the stage is removed however it ends. Works on any SandboxFs (rename and
// remove within one directory tree are what every provider has).

import { randomBytes } from 'node:crypto';
import { SandboxError } from '../errors.ts';
import type { PlannedEntry, UploadEntry } from './tar.ts';
import type { SandboxFs } from './types.ts';

type Fs = Pick<SandboxFs, 'stat' | 'mkdir' | 'remove' | 'rename' | 'resolve'>;
type Kind = 'missing' | 'file' | 'directory' | 'symlink' | 'other';

const kindOf = async (fs: Fs, path: string): Promise<Kind> => {
  try {
    return (await fs.stat(path)).type;
  } catch (e) {
    if (e instanceof SandboxError && (e.code === 'FILE_NOT_FOUND' || e.code === 'NOT_A_DIRECTORY'))
      return 'missing';
    throw e;
  }
};

const inTheWay = (path: string): SandboxError =>
  new SandboxError('NOT_A_DIRECTORY', `Upload target ${path} is not a directory (a file is in the way).`, {
    data: { path },
  });
const dirInTheWay = (path: string): SandboxError =>
  new SandboxError('NOT_A_FILE', `Upload would replace directory ${path} with a file.`, { data: { path } });

interface Node {
  type: 'file' | 'directory';
  children: Map<string, Node>;
}

/** The archive as a tree; a name used both as a file and as a directory is refused. */
const treeOf = (dir: string, plan: PlannedEntry[]): Node => {
  const root: Node = { type: 'directory', children: new Map() };
  for (const e of plan) {
    if (e.name === '') continue;
    const parts = e.name.split('/');
    let node = root;
    parts.forEach((part, i) => {
      const leaf = i === parts.length - 1;
      const want = leaf ? e.type : 'directory';
      const path = `${dir}/${parts.slice(0, i + 1).join('/')}`;
      let child = node.children.get(part);
      if (!child) {
        child = { type: want, children: new Map() };
        node.children.set(part, child);
      } else if (child.type !== want) throw want === 'directory' ? inTheWay(path) : dirInTheWay(path);
      node = child;
    });
  }
  return root;
};

/**
 * Step 1: every path the archive needs, checked against what exists. Returns the directories to
 * create, parents first. Existing symlinks are left to the commit (sandboxd follows those that stay
 * inside the workspace); a failure there is rolled back like any other.
 */
const check = async (fs: Fs, dir: string, tree: Node): Promise<string[]> => {
  const create: string[] = [];
  // The target and its missing ancestors, up to the root.
  const root = fs.resolve('.');
  const missing: string[] = [];
  for (let p = dir; ; p = p.slice(0, p.lastIndexOf('/')) || '/') {
    const k = await kindOf(fs, p);
    if (k === 'directory' || (k === 'symlink' && p !== dir)) break;
    if (k !== 'missing' || p === root) throw inTheWay(p);
    missing.unshift(p);
  }
  create.push(...missing);
  const walk = async (path: string, node: Node, exists: boolean): Promise<void> => {
    for (const [name, child] of node.children) {
      const p = `${path}/${name}`;
      const k = exists ? await kindOf(fs, p) : 'missing';
      if (child.type === 'file') {
        if (k === 'directory') throw dirInTheWay(p);
        if (k === 'other')
          throw new SandboxError('NOT_A_FILE', `Upload would replace ${p}, which is not a regular file.`);
        continue;
      }
      if (k === 'missing') create.push(p);
      else if (k !== 'directory' && k !== 'symlink') throw inTheWay(p);
      await walk(p, child, k !== 'missing');
    }
  };
  await walk(dir, tree, missing.length === 0);
  return create;
};

/**
 * Writes validated upload entries under `dir` (created when missing), all or nothing (see the
 * header). `plan` lists the entries in the order `entries` yields them; `writeFile` is the
 * provider's way to write one file of any size from its streamed content.
 */
export const extractEntries = async (
  fs: Fs,
  dir: string,
  plan: PlannedEntry[],
  entries: AsyncIterable<UploadEntry>,
  writeFile: (target: string, content: AsyncIterable<Buffer>, mode: number) => Promise<void>,
): Promise<{ files: number; bytes: number }> => {
  const creates = await check(fs, dir, treeOf(dir, plan));
  const created: string[] = [];
  const moved: Array<{ target: string; backup: string | undefined }> = [];
  let stage: string | undefined;
  const undo = async (): Promise<void> => {
    for (const m of moved.reverse()) {
      await fs.remove(m.target).catch(() => {});
      if (m.backup) await fs.rename(m.backup, m.target).catch(() => {});
    }
    if (stage) await fs.remove(stage, { recursive: true }).catch(() => {});
    for (const d of created.reverse()) await fs.remove(d).catch(() => {});
  };
  try {
    const mkdir = async (d: string): Promise<void> => {
      try {
        await fs.mkdir(d);
        created.push(d);
      } catch (e) {
        if ((await kindOf(fs, d)) !== 'directory') throw e;
      }
    };
    for (const d of creates.filter((d) => d === dir || !d.startsWith(`${dir}/`))) await mkdir(d);
    // Step 2: stage every file's content.
    stage = fs.resolve(`${dir}/.dsh-upload-${randomBytes(6).toString('hex')}`);
    await fs.mkdir(stage);
    const staged: Array<{ target: string; from: string }> = [];
    let files = 0;
    let bytes = 0;
    let i = 0;
    for await (const e of entries) {
      const planned = plan[i];
      if (planned?.name !== e.name || planned.type !== e.type)
        throw new SandboxError('INTERNAL', 'The upload changed between its two passes.');
      if (e.type === 'file') {
        const from = `${stage}/${i}`;
        await writeFile(from, e.content, e.mode);
        staged.push({ target: fs.resolve(`${dir}/${e.name}`), from });
        files++;
        bytes += e.size;
      }
      i++;
    }
    // Step 3: commit.
    for (const d of creates) if (d !== dir && d.startsWith(`${dir}/`)) await mkdir(d);
    let n = 0;
    for (const s of staged) {
      const backup = `${stage}/b${n++}`;
      let saved: string | undefined = backup;
      try {
        await fs.rename(s.target, backup);
      } catch (e) {
        if (!(e instanceof SandboxError && e.code === 'FILE_NOT_FOUND')) throw e;
        saved = undefined;
      }
      moved.push({ target: s.target, backup: saved });
      await fs.rename(s.from, s.target);
    }
    await fs.remove(stage, { recursive: true }).catch(() => {});
    return { files, bytes };
  } catch (e) {
    await undo();
    throw e;
  }
};
