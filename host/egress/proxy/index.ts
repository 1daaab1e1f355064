// Sandbox egress through sandboxd's proxy, the control plane's end: for every live sandboxd session
// of an agent, a pump that keeps one `egressAccept` waiting (sandbox-image/sandboxd/egress.ts), plus
// one per open tunnel up to `maxTunnels`, and hands each connection that arrives to the proxy server
// (./server.ts) as its agent, after handing sandboxd the tenant's interception CA to trust. The
// docker provider calls `attach` for each session it opens, holds the session's calls until the CA
// is sent (`trusted`), and calls the returned stop when it ends.
// Invariants: at most `maxTunnels` connections of one sandbox are open here at once (more wait in
// sandboxd, which answers 503 when none frees up in time); an accept's first piece says that a
// connection arrived (sandboxd sends an empty one at once; an older one's first piece is the
// client's first bytes), and only then is the next accept asked for and the connection served, so
// its head deadline (./heads.ts) starts when it arrived and never while an accept waits, and an
// idle client holds up no other connection, only its own place until that deadline; the caller is
// looked up (a store read) when a connection arrives, so a deleted agent gets a refusal.
import { SandboxError } from '../../errors.ts';
import type { SandboxdEgress } from '../../sandbox/sandboxd/client.ts';
import type { EgressCaller } from '../types.ts';
import { tunnelDuplex } from './duplex.ts';
import { createProxyServer, type ProxyServerOptions } from './server.ts';

export interface SandboxEgressOptions extends ProxyServerOptions {
  /** Who an agent's sandbox egress is (its tenant and session); undefined: refused (a deleted agent). */
  callerOf: (agentId: string) => Promise<EgressCaller | undefined>;
  /** Connections open at once per sandbox. Default 32. */
  maxTunnels?: number;
  /** An accept that failed for another reason than the session ending (an old sandboxd). */
  onError?: (error: unknown) => void;
}

/** The proxy served on one sandboxd session. */
export interface AttachedEgress {
  /** Stops serving it (the session ended). */
  stop: () => void;
  /**
   * Settles once the tenant's interception CA is on its way to sandboxd (its frame written on the
   * session's link, which sandboxd takes in order), or nothing is to be trusted (no interception,
   * a deleted agent, a failure reported through onError). A call sent after it settles reaches
   * sandboxd after the CA: a command started then finds it in the bundle it reads at its start.
   */
  trusted: Promise<void>;
}

export interface SandboxEgress {
  /** Serves the proxy of `agentId`'s sandbox on one sandboxd session. */
  attach(agentId: string, egress: SandboxdEgress): AttachedEgress;
  close(): void;
}

/** The session went away under the accept (a detach, a lost connection, a new hello): no failure. */
const sessionEnded = (e: unknown): boolean =>
  e instanceof SandboxError && (e.code === 'SANDBOX_UNAVAILABLE' || e.code === 'ABORTED');

export function createSandboxEgress(options: SandboxEgressOptions): SandboxEgress {
  const proxy = createProxyServer(options);
  const maxTunnels = options.maxTunnels ?? 32;
  const stops = new Set<() => void>();

  function attach(agentId: string, egress: SandboxdEgress): AttachedEgress {
    const ac = new AbortController();
    let waiting = 0;
    let open = 0;
    let failed = false;

    function more(): void {
      while (!ac.signal.aborted && !failed && waiting === 0 && open + waiting < maxTunnels) void take();
    }

    async function take(): Promise<void> {
      waiting++;
      const { io, result } = egress.accept(ac.signal);
      const pieces = io.incoming[Symbol.asyncIterator]();
      // The connection's arrival (sandboxd's empty mark), or its first bytes (an older sandboxd).
      const first = await pieces.next().catch(() => undefined);
      waiting--;
      if (first === undefined || first.done) {
        // No connection: a client that closed at once (go on), or the accept failed (stop, and say
        // why unless the session simply ended).
        const why = await result.then(
          () => undefined,
          (e: unknown) => e,
        );
        if (why !== undefined) {
          failed = true;
          if (!ac.signal.aborted && !sessionEnded(why)) options.onError?.(why);
        }
        return more();
      }
      open++;
      more();
      const duplex = tunnelDuplex(io, pieces, first.value);
      const caller = await options.callerOf(agentId).catch((e: unknown) => {
        options.onError?.(e);
        return undefined;
      });
      if (caller) proxy.handle(duplex, caller);
      else duplex.destroy();
      await result.catch(() => {});
      open--;
      more();
    }

    // The sandbox trusts its tenant's interception CA (sandboxd adds it to the bundle its processes
    // use). `trusted` settles when the frame is written, not when sandboxd answers: the session's
    // calls wait for it (agent-live.ts), and a round trip more on every session's first call would
    // be waste, since sandboxd takes a session's frames in order.
    const sent = Promise.withResolvers<void>();
    const authorities = options.intercept;
    if (authorities)
      options
        .callerOf(agentId)
        .then(async (caller) => {
          if (caller === undefined) return;
          const answered = egress.trust(await authorities.caOf(caller.tenantId));
          sent.resolve();
          // Awaited: a session that ends before sandboxd answers (the agent deleted right after its
          // first call) rejects it, and that rejection must land in the catch below, not crash the process.
          await answered;
        })
        .catch((e: unknown) => {
          if (!sessionEnded(e)) options.onError?.(e);
        })
        .finally(() => sent.resolve());
    else sent.resolve();
    more();
    const stop = (): void => {
      stops.delete(stop);
      ac.abort();
    };
    stops.add(stop);
    return { stop, trusted: sent.promise };
  }

  return {
    attach,
    close() {
      for (const stop of [...stops]) stop();
      proxy.close();
    },
  };
}
