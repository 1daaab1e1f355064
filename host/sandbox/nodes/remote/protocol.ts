// The node protocol, version 1 (docs/nodes.md): what a control plane and a node agent (`dsh-node`)
// say to each other over HTTPS with mutual TLS. Every call is `POST /v1/<method>` with a JSON body
// and the header `x-dsh-instance` (the control plane's instance: the node keeps each instance's
// sandboxes apart, as one engine shared by several control planes always did); the answer is JSON,
// or `{ error: { code, message, data } }` with the code's HTTP status. The two byte streams are
// HTTP upgrades (`Upgrade: dsh-node/1`): `GET /v1/open?agent=<id>[&restart=1]` answers 101 with the
// channel's id (`x-dsh-channel`) and whether it offers a link (`x-dsh-link`), then carries
// sandboxd's stdio; `GET /v1/link?channel=<id>` answers 101 with the link's token
// (`x-dsh-link-token`), then one byte (ACCEPTED once sandboxd dialled with the token, else the
// stream closes), then carries the link's bytes. The node reads none of those bytes.
// Pooled channels (a node whose `info` lists the feature `pooled`; a control plane falls back to
// the calls above without it): `pooled` answers the ids of the node's ready pooled sandboxes nobody
// claimed; `GET /v1/open?pooled=<id>` claims one (the node hands its channel to this one stream only)
// and answers, besides the channel's headers, the claim's token (`x-dsh-claim`); `ensure` with
// `pooled: [{ id, claim }]` takes one of those first, and no ensure without its claim takes it.
// `pooled` also answers the pool's `size`; `capacity` and `filled` take the caller's claims
// (`pooled`, as ensure) and answer the pool's ready count as the caller can use it: the pooled
// sandboxes nobody claimed and its own, not another control plane's (`info` answers the unclaimed).
// Invariant: a body is at most MAX_BODY_BYTES; every string an argument carries is bounded and
// checked here, on the node's side, before anything is asked of the engine.

import { httpStatusOf, messageOf, SandboxError } from '../../../errors.ts';
import { SANDBOX_RUNTIMES, type SandboxRuntime } from '../../runtimes.ts';
import type { PauseMode, SandboxLimits } from '../../types.ts';
import type { AdoptQuestions } from '../types.ts';

export const PROTOCOL = 'dsh-node/1';
export const PREFIX = '/v1/';
export const MAX_BODY_BYTES = 1024 * 1024;
/**
 * The largest answer a control plane reads from a node (a call's JSON, an upgrade's refusal): the
 * largest honest one is `adopt`'s list of container names, well under this. A node that sends
 * more fails that call; the control plane never holds a hostile node's answer whole.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** The byte the node sends on a link stream once sandboxd dialled. */
export const ACCEPTED = 0x01;

export const HEADER_INSTANCE = 'x-dsh-instance';
export const HEADER_CHANNEL = 'x-dsh-channel';
export const HEADER_LINK = 'x-dsh-link';
export const HEADER_LINK_TOKEN = 'x-dsh-link-token';
export const HEADER_CLAIM = 'x-dsh-claim';
/** What `info` lists (`features`) when the node serves pooled channels. */
export const FEATURE_POOLED = 'pooled';

/** The calls (each a `SandboxNode` method but open and link, which are upgrades). */
export const METHODS = [
  'info',
  'ensure',
  'find',
  'state',
  'stop',
  'destroy',
  'usage',
  'adopt',
  'capacity',
  'filled',
  'pause',
  'snapshot',
  'dropSnapshot',
  'sweepSnapshots',
  'pooled',
] as const;
export type Method = (typeof METHODS)[number];

const AGENT_ID = /^[\x21-\x7e]{1,200}$/;

const bad = (message: string): SandboxError => new SandboxError('INVALID_ARGUMENTS', message);

/** An agent id as the node takes it: 1-200 printable ASCII characters. */
export const agentIdOf = (value: unknown): string => {
  if (typeof value !== 'string' || !AGENT_ID.test(value))
    throw bad('agentId must be 1-200 printable ASCII characters');
  return value;
};

/** A runtime as the node takes it: one of SANDBOX_RUNTIMES (whether its engine offers it is ensure's). */
export const runtimeOf = (value: unknown): SandboxRuntime => {
  if (!(SANDBOX_RUNTIMES as readonly unknown[]).includes(value))
    throw bad(`runtime must be one of ${SANDBOX_RUNTIMES.join(', ')}`);
  return value as SandboxRuntime;
};

/** The runtimes a node's capacity lists, as the control plane takes them: known ones only, runc always. */
export const runtimesOf = (value: unknown): SandboxRuntime[] => {
  const listed = Array.isArray(value) ? value : [];
  return SANDBOX_RUNTIMES.filter((r) => r === 'runc' || listed.includes(r));
};

const POOLED_ID = /^[0-9a-f]{1,64}$/;
const CLAIM = /^[0-9a-f]{32}$/;

/** A pooled sandbox's id as the node takes it (its container's id). */
export const pooledIdOf = (value: unknown): string => {
  if (typeof value !== 'string' || !POOLED_ID.test(value))
    throw bad('a pooled id is 1-64 lowercase hex digits');
  return value;
};

/** The most claims a call carries (a node's pool holds at most 64: DSH_POOL_SIZE). */
export const MAX_CLAIMS = 64;

/** The claims an ensure, capacity or filled carries, as the node takes them: at most MAX_CLAIMS `{ id, claim }`. */
export const pooledOf = (value: unknown): Array<{ id: string; claim: string }> => {
  if (!Array.isArray(value) || value.length > MAX_CLAIMS)
    throw bad(`pooled must be a list of at most ${MAX_CLAIMS} claims`);
  return value.map((v) => {
    const o = objectOf(v, 'a pooled claim');
    if (typeof o.claim !== 'string' || !CLAIM.test(o.claim)) throw bad('a claim is 32 lowercase hex digits');
    return { id: pooledIdOf(o.id), claim: o.claim };
  });
};

/** The pooled ids a node answered, as the control plane takes them (anything else is dropped). */
export const pooledIdsOf = (value: unknown): string[] =>
  (Array.isArray(value) ? value : []).filter((v): v is string => typeof v === 'string' && POOLED_ID.test(v));

/** A pool size or ready count a node answered, as the control plane takes it: a whole, non-negative number, else unknown. */
export const poolSizeOf = (value: unknown): number | undefined =>
  Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined;

const SNAPSHOT_ID = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$/;

/** Whether `value` is a snapshot id (a plain name: it becomes a file name on the node). */
export const isSnapshotId = (value: unknown): value is string =>
  typeof value === 'string' && SNAPSHOT_ID.test(value);

/** A snapshot id as the node takes it: a plain name (it becomes a file name on the node). */
export const snapshotIdOf = (value: unknown): string => {
  if (!isSnapshotId(value))
    throw bad('a snapshot id is 1-121 letters, digits, `_`, `.` or `-`, starting with a letter or digit');
  return value;
};

/** A snapshot's answer as the control plane takes it: two whole, non-negative byte counts. */
export const snapshotDoneOf = (value: unknown): { sizeBytes: number; bytes: number } => {
  const o = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const { sizeBytes, bytes } = o;
  if (
    !Number.isSafeInteger(sizeBytes) ||
    !Number.isSafeInteger(bytes) ||
    (sizeBytes as number) < 0 ||
    (bytes as number) < 0
  )
    throw new SandboxError('SANDBOX_UNAVAILABLE', 'The node answered a snapshot without its sizes.');
  return { sizeBytes: sizeBytes as number, bytes: bytes as number };
};

const LIMIT_KEYS = ['memoryBytes', 'nanoCpus', 'pids', 'maxReadBytes', 'maxOutputBytes'] as const;
const positive = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;

/**
 * A node's defaults or maxima (`info`) as the control plane takes them: every limit a positive
 * whole number (`diskBytes` may be absent), only the known ones kept; undefined for anything else.
 * Placement computes with them and sends them to the other nodes, so junk here would reach them.
 */
export const limitsOf = (value: unknown): SandboxLimits | undefined => {
  if (typeof value !== 'object' || value === null) return undefined;
  const o = value as Record<string, unknown>;
  if (!LIMIT_KEYS.every((k) => positive(o[k]))) return undefined;
  if (o.diskBytes !== undefined && !positive(o.diskBytes)) return undefined;
  const out = Object.fromEntries(LIMIT_KEYS.map((k) => [k, o[k]])) as unknown as SandboxLimits;
  return o.diskBytes === undefined ? out : { ...out, diskBytes: o.diskBytes as number };
};

/** A pause's mode as the node takes it. */
export const pauseModeOf = (value: unknown): PauseMode => {
  if (value !== 'stop' && value !== 'freeze') throw bad('mode must be "stop" or "freeze"');
  return value;
};

/** A pause's answer as the control plane takes it (a node answering anything else is refused). */
export const pauseDoneOf = (value: unknown): PauseMode | 'none' => {
  if (value !== 'stop' && value !== 'freeze' && value !== 'none')
    throw new SandboxError('SANDBOX_UNAVAILABLE', 'The node answered a pause with no known outcome.');
  return value;
};

export const stringsOf = (value: unknown, what: string, max = 100_000): string[] => {
  if (value === undefined) return [];
  if (
    !Array.isArray(value) ||
    value.length > max ||
    value.some((v) => typeof v !== 'string' || v.length > 200)
  )
    throw bad(`${what} must be a list of short strings`);
  return value as string[];
};

/**
 * A node's adopt questions (its first `adopt` step) as the control plane takes them: the short
 * strings of each list, anything else dropped. The answers it gets back are about these only.
 */
export const adoptQuestionsOf = (value: unknown): AdoptQuestions => {
  const o = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const shortStrings = (v: unknown): string[] =>
    (Array.isArray(v) ? v : []).filter((x): x is string => typeof x === 'string' && x.length <= 200);
  return { sandboxes: shortStrings(o.sandboxes), agents: shortStrings(o.agents) };
};

export const objectOf = (value: unknown, what: string): Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw bad(`${what} must be an object`);
  return value as Record<string, unknown>;
};

/** The JSON an error travels as. */
export const errorBody = (
  e: unknown,
): { status: number; body: { error: { code: string; message: string; data?: unknown } } } => {
  if (e instanceof SandboxError)
    return {
      status: httpStatusOf(e.code),
      body: {
        error: { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) },
      },
    };
  return { status: 500, body: { error: { code: 'INTERNAL', message: messageOf(e) } } };
};
