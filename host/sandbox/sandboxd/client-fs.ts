// The sandboxd client's SandboxdFs: each file operation one call, its path confined first, its
// answer checked (a read that brings more bytes than asked for breaks the protocol). Streamed
// transfers (client-streams.ts) join in when sandboxd's hello says it speaks streams.

import { MAX_BINARY_BYTES } from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import { atMost, broken, type ClientState, noSymlinks, payload, readArgs } from './client-state.ts';
import { readStream, writeStream } from './client-streams.ts';
import type { SandboxdFs } from './client-types.ts';

export function createClientFs(s: ClientState): SandboxdFs {
  const streamed: Pick<SandboxdFs, 'readStream' | 'writeStream'> = s.raw.hello.streams
    ? {
        readStream: (path, offset, length) => readStream(s, path, offset, length),
        writeStream: (path, source, opts) => writeStream(s, path, source, opts),
      }
    : {};
  const fs: SandboxdFs = {
    ...streamed,
    root: s.root,
    resolve: s.resolve,
    async readFile(path, opts = {}) {
      const args = readArgs(s, path, opts, s.maxReadBytes);
      const { data } = await s.conn.call('readFile', args, s.plain);
      if (data === undefined) throw broken(s, 'answered a read without its bytes');
      return atMost(s, data, Math.min(args.length ?? s.maxReadBytes, s.maxReadBytes));
    },
    async readWithStat(path, opts = {}) {
      const asked =
        opts.maxBytes === undefined ? s.maxReadBytes : Math.max(0, Math.floor(opts.maxBytes) || 0);
      const most = Math.min(asked, s.maxReadBytes);
      const args = readArgs(s, path, opts, most);
      const answer = await s.conn.call('readFile', { ...args, stat: true }, s.plain);
      const { data } = answer;
      // A sandboxd from before readWithStat ignores `stat` and answers as readFile does: ask it.
      const stat = answer.stat ?? (await s.conn.call('stat', { path: args.path }, s.plain));
      if (data === undefined) return { stat };
      return { stat, data: atMost(s, data, Math.min(args.length ?? most, most)) };
    },
    async readRange(path, offset, length) {
      const abs = s.resolve(path);
      for (const [name, value, max] of [
        ['offset', offset, Number.MAX_SAFE_INTEGER],
        ['length', length, MAX_BINARY_BYTES],
      ] as const) {
        if (!Number.isInteger(value) || value < 0 || value > max)
          throw new SandboxError('INVALID_ARGUMENTS', `${name} must be an integer from 0 to ${max}.`, {
            data: { path: abs, [name]: value },
          });
      }
      const { data, size } = await s.conn.call('readRange', { path: abs, offset, length }, s.plain);
      return { data: atMost(s, data, Math.min(length, Math.max(0, size - offset))), size };
    },
    async writeFile(path, data, opts = {}) {
      const abs = s.resolve(path);
      await s.conn.call(
        'writeFile',
        { path: abs, data: payload(abs, data), mode: opts.mode, ...noSymlinks(s, opts) },
        s.plain,
      );
    },
    async appendFile(path, data, opts = {}) {
      const abs = s.resolve(path);
      await s.conn.call('appendFile', { path: abs, data: payload(abs, data), mode: opts.mode }, s.plain);
    },
    stat: (path) => s.conn.call('stat', { path: s.resolve(path) }, s.plain),
    async exists(path) {
      try {
        await s.conn.call('stat', { path: s.resolve(path) }, s.plain);
        return true;
      } catch (e) {
        if (e instanceof SandboxError && (e.code === 'FILE_NOT_FOUND' || e.code === 'NOT_A_DIRECTORY'))
          return false;
        throw e;
      }
    },
    async list(path) {
      return (await s.conn.call('list', { path: s.resolve(path) }, s.plain)).entries;
    },
    async mkdir(path, opts = {}) {
      await s.conn.call(
        'mkdir',
        { path: s.resolve(path), recursive: opts.recursive === true, ...noSymlinks(s, opts) },
        s.plain,
      );
    },
    async remove(path, opts = {}) {
      await s.conn.call(
        'remove',
        { path: s.resolve(path), recursive: opts.recursive === true, ...noSymlinks(s, opts) },
        s.plain,
      );
    },
    async rename(from, to) {
      await s.conn.call('rename', { from: s.resolve(from), to: s.resolve(to) }, s.plain);
    },
    glob: (pattern, opts = {}) =>
      s.conn.call(
        'glob',
        { pattern: String(pattern), cwd: s.resolve(opts.cwd ?? '.'), limit: opts.limit ?? 1000 },
        s.plain,
      ),
    grep: (pattern, opts = {}) =>
      s.conn.call(
        'grep',
        {
          pattern: String(pattern),
          path: s.resolve(opts.path ?? '.'),
          include: opts.include,
          ignoreCase: opts.ignoreCase === true,
          skipIgnored: opts.skipIgnored === true,
          limit: opts.limit ?? 1000,
        },
        s.plain,
      ),
  };
  return fs;
}
