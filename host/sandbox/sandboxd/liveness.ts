// The liveness watchdog of a sandboxd connection: while calls are in flight, a ping every `ms` that
// must be answered within `ms`; an unanswered one fails the connection with an error isUnresponsive
// recognises. Pings do not count as calls; a waiting egress accept (raw.stream) is outside it.

import { SandboxError } from '../../errors.ts';
import type { Connection } from './connection.ts';

/** Unresponsive sandboxd: what the liveness watchdog fails the connection with. */
export const isUnresponsive = (e: unknown): boolean =>
  e instanceof SandboxError && (e.data as { unresponsive?: unknown } | undefined)?.unresponsive === true;

/**
 * `conn` with a watchdog: while calls are in flight, a ping every `ms` that must be answered within
 * `ms`; an unanswered one fails the connection (isUnresponsive). Pings do not count as calls.
 */
export const watchLiveness = (conn: Connection, ms: number): Connection => {
  if (ms <= 0) return conn;
  let inflight = 0;
  let timer: NodeJS.Timeout | undefined;
  const probe = (): void => {
    timer = undefined;
    if (inflight === 0) return;
    conn.call('ping', {}, { timeoutMs: ms }).then(
      () => {
        if (inflight > 0 && !timer) timer = setTimeout(probe, ms).unref();
      },
      (e: unknown) => {
        if (
          !(e instanceof SandboxError) ||
          e.code !== 'SANDBOX_UNAVAILABLE' ||
          !/did not answer/.test(e.message)
        )
          return; // the connection failed for another reason, already reported
        conn.close(
          new SandboxError(
            'SANDBOX_UNAVAILABLE',
            `sandboxd stopped answering (no answer to a liveness ping within ${ms} ms); the sandbox is being restarted, try again.`,
            { data: { unresponsive: true } },
          ),
        );
      },
    );
  };
  void conn.closed.then(() => clearTimeout(timer));
  return {
    get hello() {
      return conn.hello;
    },
    closed: conn.closed,
    close: (reason) => conn.close(reason),
    get openStreams() {
      return conn.openStreams;
    },
    call(op, args, options) {
      inflight++;
      if (!timer) timer = setTimeout(probe, ms).unref();
      return conn.call(op, args, options).finally(() => {
        inflight--;
      });
    },
    stream(op, args, options) {
      const opened = conn.stream(op, args, options);
      inflight++;
      if (!timer) timer = setTimeout(probe, ms).unref();
      opened.result
        .finally(() => {
          inflight--;
        })
        .catch(() => {});
      return opened;
    },
  };
};
