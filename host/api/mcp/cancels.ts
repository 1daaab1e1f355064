// MCP calls in flight in this process, so that a 2025-era `notifications/cancelled` — which a
// stateless server receives in a POST of its own, answered by a fresh server instance — reaches
// the call it names. Keys are tenant + agent + the client's session id (minted statelessly at
// initialize, see ../routes/mcp.ts) + the JSON-RPC request id, so one client cannot cancel
// another's call that happens to share its request id.
// Invariants: an entry lives exactly as long as its call (the caller's `done` removes it); a cancel
// for an unknown or finished call is a no-op; memory is bounded by the calls in flight, which the
// tenant concurrency slots bound.

export interface InflightCalls {
  /** Registers a call; `signal` aborts when a matching cancel arrives; call `done` when it settled. */
  begin(key: CallKey): { signal: AbortSignal; done: () => void };
  /** Aborts the call with this key, if it is in flight here. */
  cancel(key: CallKey, reason: string): void;
  size(): number;
}

export interface CallKey {
  tenantId: string;
  agentId: string;
  session: string | undefined;
  requestId: string | number;
}

const keyOf = (k: CallKey): string =>
  JSON.stringify([k.tenantId, k.agentId, k.session ?? '', typeof k.requestId, String(k.requestId)]);

export function createInflightCalls(): InflightCalls {
  const calls = new Map<string, AbortController>();

  function begin(key: CallKey) {
    const id = keyOf(key);
    const controller = new AbortController();
    // A client reusing a request id while its first call runs: the newer call owns the key.
    calls.set(id, controller);
    return {
      signal: controller.signal,
      done: () => {
        if (calls.get(id) === controller) calls.delete(id);
      },
    };
  }

  function cancel(key: CallKey, reason: string): void {
    calls.get(keyOf(key))?.abort(reason);
  }

  return { begin, cancel, size: () => calls.size };
}
