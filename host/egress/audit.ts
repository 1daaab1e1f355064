// The audit trail of egress: one `egress` event in the agent's durable log (log-only, linked to the
// call it serves) per connection or HTTP request, allowed or refused: who, where (host, port, the
// resolved and pinned address, for HTTP the method and the URL without userinfo), the decision and
// its reason, bytes both ways, the status, and the names (never values) of credentials added (and
// of those kept back from a plain-HTTP request).
// A refused destination is logged when refused, an allowed one when it closes.
import type { JsonValue } from '../json.ts';
import type { EventLog } from '../store/types.ts';
import type { EgressCaller } from './types.ts';

export const EGRESS_EVENT = 'egress';

export interface EgressRecord {
  decision: 'allow' | 'deny';
  reason?: string;
  host: string;
  port: number;
  method?: string;
  url?: string;
  /** The address connected to (allowed), or the one that was refused. */
  ip?: string;
  status?: number;
  bytesIn?: number;
  bytesOut?: number;
  durationMs?: number;
  credentials?: string[];
  /** Credentials for the host not added because the request was plain HTTP (names). */
  withheld?: string[];
  /** How it ended, when not cleanly (a cap, a budget, an error). */
  error?: string;
}

export type Audit = (caller: EgressCaller, record: EgressRecord) => void;

/**
 * Appends to the caller's session. A log that refuses the append (its budget) can lose only a
 * denial's audit: an allowed egress's audit settles (kept past the budget, host/store), and the
 * gateway allows nothing while the log refuses the session's events.
 */
export function createAudit(events: Pick<EventLog, 'append'>, onError?: (error: unknown) => void): Audit {
  return function audit(caller, record) {
    const data = {
      via: caller.via,
      tenantId: caller.tenantId,
      agentId: caller.agentId,
      ...record,
    };
    let appended: Promise<unknown>;
    try {
      appended = events.append([
        {
          sessionId: caller.sessionId,
          type: EGRESS_EVENT,
          surface: 'log-only',
          ...(caller.callId === undefined ? {} : { callId: caller.callId }),
          data: JSON.parse(JSON.stringify(data)) as JsonValue,
        },
      ]);
    } catch (error) {
      // the record did not serialize: reported like a refused append
      appended = Promise.reject(error);
    }
    appended.catch((error: unknown) => onError?.(error));
  };
}
