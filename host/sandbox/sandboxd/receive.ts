// What sandboxd sends, read: each decoded frame checked against its schema and routed: the hello
// (this session's, a stale one, or another client's that took over), stream credit and ends, a
// call's streamed output, and a call's answer (its error code kept only when it is on sandboxd's
// short list, ../wire-errors.ts; its value checked against the op's schema).
// Invariants: what sandboxd sends never throws here; a frame that fails its schema, or an answer
// whose value fails its op's schema, fails the whole connection with SANDBOX_PROTOCOL; answers to
// unknown ids (late, cancelled or timed out calls) are ignored; a caller's output callback that
// throws does not break the connection.
import * as v from 'valibot';
import {
  LINK_VERSION,
  NO_SYMLINKS_VERSION,
  PROTOCOL_VERSION,
  STREAMS_VERSION,
} from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import { fromWireAnswer } from '../wire-errors.ts';
import { type ConnState, fail, protocolError } from './connection-state.ts';
import { daemonMessageSchema, type ParsedDaemonMessage } from './schemas.ts';

/** One decoded message frame. */
export function receive(s: ConnState, raw: Record<string, unknown>): void {
  if (!s.synced || s.failure) return;
  const parsed = v.safeParse(daemonMessageSchema, raw);
  if (!parsed.success) {
    protocolError(s, `bad frame: ${parsed.issues[0]?.message ?? 'schema'}`);
    return;
  }
  const m = parsed.output;
  if (m.t === 'hello') {
    receiveHello(s, m);
    return;
  }
  if (!s.hello) return; // output of the previous session
  if (m.t === 'credit') {
    s.streams.credit(m.id, m.bytes);
    return;
  }
  if (m.t === 'end') {
    s.streams.end(m.id);
    return;
  }
  if (m.t === 'res') s.streams.answered(m.id);
  const p = s.pending.get(m.id);
  if (!p) return;
  if (m.t === 'out') {
    try {
      p.onOut?.(m.stream, Buffer.from(m.data, 'base64'));
    } catch {
      // a caller's callback must not break the connection
    }
    return;
  }
  if (m.t === 'tout') {
    try {
      p.onTerm?.(m.offset, Buffer.from(m.data, 'base64'));
    } catch {
      // a caller's callback must not break the connection
    }
    return;
  }
  s.pending.delete(m.id);
  if (!m.ok) {
    p.reject(fromWireAnswer(p.op, m.error));
    return;
  }
  const value = v.safeParse(s.schemas[p.op], m.value);
  if (!value.success) {
    const e = new SandboxError(
      'SANDBOX_PROTOCOL',
      `sandboxd broke the protocol (bad ${p.op} answer: ${value.issues[0]?.message ?? 'schema'}); the connection was closed.`,
    );
    p.reject(e);
    fail(s, e);
    return;
  }
  p.resolve(value.output);
}

function receiveHello(s: ConnState, m: Extract<ParsedDaemonMessage, { t: 'hello' }>): void {
  if (m.session !== s.session) {
    if (s.hello)
      fail(
        s,
        new SandboxError(
          'SANDBOX_UNAVAILABLE',
          'Another client took over this sandbox; reconnect to use it.',
        ),
      );
    return; // a stale answer to an earlier client's hello
  }
  if (m.v !== PROTOCOL_VERSION) {
    protocolError(s, `protocol version ${m.v}, expected ${PROTOCOL_VERSION}`);
    return;
  }
  if (m.root !== s.root) {
    protocolError(s, `sandboxd root ${m.root}, expected ${s.root}`);
    return;
  }
  s.hello = {
    pid: m.pid,
    root: m.root,
    node: m.node,
    streams: (m.streams ?? 0) >= STREAMS_VERSION,
    link: (m.link ?? 0) >= LINK_VERSION,
    noSymlinks: (m.noSymlinks ?? 0) >= NO_SYMLINKS_VERSION,
  };
  s.helloDone?.resolve();
}

/** One decoded data frame: bytes of an open stream (only when sandboxd said it speaks streams). */
export function receiveData(s: ConnState, id: number, payload: Buffer[]): void {
  if (!s.synced || s.failure || !s.hello) return;
  if (!s.hello.streams) {
    protocolError(s, 'a data frame, but sandboxd did not offer streams');
    return;
  }
  s.streams.data(id, payload);
}
