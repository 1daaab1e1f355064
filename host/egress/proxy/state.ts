// The proxy server's options and the state its parts share (server.ts wires them): the gateway,
// the bounds, which caller each arriving connection is, and where each intercepted TLS connection
// leads.
// Invariants: a connection's caller is fixed when it arrives (`callers`, set by handle()); an
// intercepted TLS socket is in `inside` from before the inner server sees it, with the caller and
// origin of its CONNECT.
import type { Server } from 'node:http';
import type { EgressGateway } from '../gateway.ts';
import type { Authorities } from '../intercept/authority.ts';
import type { EgressCaller } from '../types.ts';

export interface ProxyServerOptions {
  gateway: Pick<EgressGateway, 'audit' | 'authorize' | 'connect' | 'fetch' | 'intercepts'>;
  /** The tenants' CAs: HTTPS to a host with a credential is intercepted with them. Default none: every CONNECT is a tunnel. */
  intercept?: Authorities;
  /** Largest request head from the client. Default 16 KiB. */
  maxHeaderBytes?: number;
  /** Largest body of a plain-HTTP request (CONNECT tunnels are not bounded here). Default 32 MiB. */
  maxBodyBytes?: number;
  /** A request head must be complete within this of the connection's arrival (each connection on its own). Default 30000 ms. */
  headersTimeoutMs?: number;
  /** The next request head on a kept-alive connection is due within this of the last answer. Default 60000 ms. */
  keepAliveMs?: number;
  /** A tunnel or upstream response idle this long is cut. Default 300000 ms. */
  idleMs?: number;
}

/** One proxy server's state, shared by its parts. */
export interface ProxyState {
  options: ProxyServerOptions;
  gateway: ProxyServerOptions['gateway'];
  maxBodyBytes: number;
  idleMs: number;
  callers: WeakMap<object, EgressCaller>;
  inside: WeakMap<object, { caller: EgressCaller; origin: string }>;
  /** The inner server that reads the requests inside intercepted TLS connections. */
  intercepted: Server;
}
