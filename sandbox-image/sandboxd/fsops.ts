// sandboxd's file operations: readFile, writeFile, stat, list, mkdir, remove, rename. Each takes the
// raw request args, confines every path (lexically, then through workspace.real) and answers with the
// value shape that host/sandbox/sandboxd/schemas.ts expects. Semantics follow the memory provider
// (the contract suite's reference): directories report size 0, list is sorted by name, writes create
// parents and replace atomically (temp file + rename), the root can be neither removed nor renamed.
// appendFile exists for the host's chunked uploads (host/sandbox/docker/write-stream.ts): it only
// extends an existing regular file, never creates one and never follows a symlink. readRange exists
// for the host's streamed downloads (host/sandbox/download.ts): one piece at an offset plus the
// file's size, confined exactly as readFile is, not bound by the model-facing read limit, and strict
// about its arguments (a length over one frame is INVALID_ARGUMENTS, not silently cut).
// This module wires them: fs-reads.ts reads (readFile, readRange, stat, list), fs-writes.ts writes
// (writeFile, appendFile, mkdir, remove, rename), both over fs-access.ts, which resolves every path
// beneath the root (beneath.ts) and opens nothing it could be tricked into following out of it.
// Names travel in byte-names.ts form, so a name that is not UTF-8 round-trips.

import { list, readFile, readRange, stat } from './fs-reads.ts';
import { appendFile, mkdir, remove, rename, writeFile } from './fs-writes.ts';
import type { Args } from './util.ts';
import type { Workspace } from './workspace.ts';

export function createFsOps(ws: Workspace) {
  return {
    readFile: (args: Args) => readFile(ws, args),
    readRange: (args: Args) => readRange(ws, args),
    writeFile: (args: Args) => writeFile(ws, args),
    appendFile: (args: Args) => appendFile(ws, args),
    stat: (args: Args) => stat(ws, args),
    list: (args: Args) => list(ws, args),
    mkdir: (args: Args) => mkdir(ws, args),
    remove: (args: Args) => remove(ws, args),
    rename: (args: Args) => rename(ws, args),
  };
}
