// DNS-rebinding protection of the agents' MCP endpoints (MCP transports: "Servers MUST validate the
// Origin header"). Clients that are not browsers send no Origin and are admitted; a browser page is
// admitted when it is served from this machine (localhost, 127.0.0.0/8, ::1) or its origin is one
// the operator listed (DSH_MCP_ORIGINS). A page from anywhere else, e.g. a site whose name was
// rebound to this service's address, is refused before any tool is listed or called.

const LOOPBACK_NAMES = new Set(['localhost', '[::1]']);

const isLoopbackHost = (hostname: string): boolean =>
  LOOPBACK_NAMES.has(hostname) || hostname.endsWith('.localhost') || /^127(?:\.\d{1,3}){3}$/.test(hostname);

/** True when a request with this Origin header (undefined: none) may use an MCP endpoint. */
export function originAdmitted(origin: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  return isLoopbackHost(url.hostname) || allowed.has(url.origin);
}
