// Host-side tar handling of uploads, shared by providers: receive an upload (spool it, validate
// every entry, then replay the validated entries to the provider's writer). Downloads are packed by
// tar-pack.ts.
// Uploads are validated COMPLETELY before anything is written, so a hostile archive changes
// nothing. Only regular files and directories pass; links, devices, FIFOs, absolute names, `..`
// components, NUL bytes and over-long names reject the whole archive (ARCHIVE_REJECTED).
// Memory: an upload is never held whole. The first pass copies the tar to a private spool file
// (spool.ts) while parsing it, so sizes are bounded as the bytes arrive (FILE_TOO_LARGE as soon as
// a header declares too much, not after buffering); the second pass parses the spool again and
// streams each file's content to the writer. Parsing holds at most one long-name record (4 MiB).
// Names are bytes: ustar and GNU long names are read byte for byte into byte-names.ts form (so a
// name that is not UTF-8 lands byte-exact); PAX paths are UTF-8 by the standard. Writing the entries
// (all or nothing) is tar-extract.ts.

import { Readable } from 'node:stream';
import { extract } from 'tar-stream';
import { fromBytes } from '../../sandbox-wire/byte-names.ts';
import { SandboxError } from '../errors.ts';
import { safeRelativeName } from './paths.ts';
import { withSpool } from './spool.ts';

/** One validated entry of an upload. */
export interface UploadEntry {
  /** Safe relative name ('' is the target directory itself). */
  name: string;
  type: 'file' | 'directory';
  mode: number;
  /** Content bytes (0 for a directory). */
  size: number;
  /** Exactly `size` bytes, streamed; read it before asking for the next entry. */
  content: AsyncIterable<Buffer>;
}

/** The shape of one entry, known from the validating pass before any content is replayed. */
export interface PlannedEntry {
  name: string;
  type: 'file' | 'directory';
}

export interface UploadLimits {
  /** Total bytes of file content. Default 256 MiB. */
  maxBytes?: number;
  /** Number of entries. Default 100000. */
  maxEntries?: number;
  /**
   * Bytes of tar (content plus headers, padding and long-name records). Default `maxBytes` plus
   * 1 KiB per allowed entry plus 4 MiB, so records that are not entries cannot grow the spool forever.
   */
  maxTarBytes?: number;
}

export interface ReceiveOptions extends UploadLimits {
  /** Directory of the spool file. Default: the OS temp directory. */
  spoolDir?: string;
}

export const DEFAULT_UPLOAD_MAX_BYTES = 256 * 1024 * 1024;
export const DEFAULT_UPLOAD_MAX_ENTRIES = 100_000;

const rejected = (why: string, data: Record<string, unknown> = {}): SandboxError =>
  new SandboxError(
    'ARCHIVE_REJECTED',
    `Archive rejected: ${why}. Send an uncompressed tar of regular files and directories with relative paths.`,
    { data },
  );

const tooLarge = (maxBytes: number): SandboxError =>
  new SandboxError('FILE_TOO_LARGE', `Archive content exceeds ${maxBytes} bytes; upload smaller parts.`, {
    data: { maxBytes },
  });

/** A parse failure becomes ARCHIVE_REJECTED; our own errors (limits, the input's) pass through. */
const unreadable = (e: unknown): SandboxError =>
  e instanceof SandboxError ? e : rejected(`not a readable tar (${(e as Error)?.message ?? e})`);

type Limits = Required<Omit<UploadLimits, 'maxTarBytes'>>;

/** The checks every entry passes, in both passes. */
const checkEntry = (
  header: {
    name: string;
    type?: string | null;
    size?: number | null;
    mode?: number | null;
    pax?: unknown;
  },
  seen: { entries: number; bytes: number },
  limits: Limits,
): Omit<UploadEntry, 'content'> => {
  // The parser reads header names as latin1, one char per byte; a PAX path is already text.
  const h = {
    ...header,
    name:
      (header.pax as { path?: string } | undefined)?.path === undefined
        ? fromBytes(Buffer.from(header.name, 'latin1'))
        : header.name,
  };
  const type = h.type ?? 'file';
  if (type !== 'file' && type !== 'directory') {
    throw rejected(`entry ${JSON.stringify(h.name)} is a ${type}; only files and directories are allowed`, {
      name: h.name,
      type,
    });
  }
  const name = safeRelativeName(h.name);
  if (name === undefined)
    throw rejected(
      `entry name ${JSON.stringify(h.name.slice(0, 200))} is absolute, contains '..' or NUL, or is too long`,
      { name: h.name },
    );
  if (type === 'file' && name === '') throw rejected('a file entry has an empty name');
  if (seen.entries >= limits.maxEntries) throw rejected(`more than ${limits.maxEntries} entries`);
  const size = type === 'file' ? (h.size ?? 0) : 0;
  if (seen.bytes + size > limits.maxBytes) throw tooLarge(limits.maxBytes);
  seen.entries++;
  seen.bytes += size;
  const mode = (h.mode ?? (type === 'directory' ? 0o755 : 0o644)) & 0o777;
  return { name, type, mode, size };
};

/**
 * Parses a tar stream into validated entries, failing on the first bad one. Each entry's content
 * must be read (or left: it is then skipped) before the next entry comes. The input is destroyed
 * when the walk ends early.
 */
async function* entriesOf(tar: Readable, limits: Limits): AsyncGenerator<UploadEntry> {
  // tar-stream takes this option; its types do not list it.
  const ex = extract({ filenameEncoding: 'latin1' } as Parameters<typeof extract>[0]);
  const seen = { entries: 0, bytes: 0 };
  tar.on('error', (e) => ex.destroy(e));
  tar.pipe(ex);
  try {
    const it = ex[Symbol.asyncIterator]();
    for (;;) {
      const next = await it.next().catch((e: unknown) => {
        throw unreadable(e);
      });
      if (next.done) return;
      const entry = next.value;
      let ended = false;
      const content = async function* (): AsyncGenerator<Buffer> {
        try {
          for await (const chunk of entry as AsyncIterable<Buffer>) yield chunk;
          ended = true;
        } catch (e) {
          throw unreadable(e);
        }
      };
      yield { ...checkEntry(entry.header, seen, limits), content: content() };
      if (!ended) for await (const _ of content());
    }
  } finally {
    tar.unpipe(ex);
    tar.destroy();
    ex.destroy();
  }
}

/**
 * Receives an uploaded tar: spools it to a private temporary file while validating every entry
 * (so a hostile or oversized archive fails before `apply` runs: nothing is written), then calls
 * `apply` with the validated entries replayed from the spool, content streamed, and the plan: every
 * entry's name and type in the same order, known before any content is replayed. The spool file is
 * removed however this ends. A failing input (a client that went away) rejects with its own
 * SandboxError, or BAD_REQUEST.
 */
export const receiveUpload = async <T>(
  tar: Readable,
  options: ReceiveOptions,
  apply: (entries: AsyncIterable<UploadEntry>, plan: PlannedEntry[]) => Promise<T>,
): Promise<T> => {
  const limits: Limits = {
    maxBytes: options.maxBytes ?? DEFAULT_UPLOAD_MAX_BYTES,
    maxEntries: options.maxEntries ?? DEFAULT_UPLOAD_MAX_ENTRIES,
  };
  const maxTarBytes = options.maxTarBytes ?? limits.maxBytes + 1024 * limits.maxEntries + 4 * 1024 * 1024;
  return withSpool(options.spoolDir, async ({ handle }) => {
    let spooled = 0;
    const spooling = async function* (): AsyncGenerator<Buffer> {
      try {
        for await (const chunk of tar as AsyncIterable<Buffer>) {
          spooled += chunk.length;
          if (spooled > maxTarBytes) throw tooLarge(limits.maxBytes);
          await handle.writeFile(chunk);
          yield chunk;
        }
      } catch (e) {
        if (e instanceof SandboxError) throw e;
        throw new SandboxError(
          'BAD_REQUEST',
          `The upload ended before it was complete (${(e as Error)?.message ?? e}).`,
          { cause: e },
        );
      }
    };
    // Pass 1: every header checked while the bytes arrive; content is only counted.
    const plan: PlannedEntry[] = [];
    try {
      for await (const entry of entriesOf(Readable.from(spooling(), { objectMode: false }), limits)) {
        plan.push({ name: entry.name, type: entry.type });
        for await (const _ of entry.content);
      }
    } catch (e) {
      tar.destroy(); // stop reading the rest of a rejected upload
      throw e;
    }
    // Pass 2: the same checks over the same bytes, now handing content to the writer.
    const replay = handle.createReadStream({ start: 0, autoClose: false });
    return apply(entriesOf(replay, limits), plan);
  });
};

/** The files `plan` writes under `dir`, as extractEntries names them (before confinement). */
export const plannedFiles = (dir: string, plan: readonly PlannedEntry[]): string[] =>
  plan.filter((entry) => entry.type === 'file').map((entry) => `${dir}/${entry.name}`);
