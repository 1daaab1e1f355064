// The address list of trusted proxies (DSH_TRUSTED_PROXIES), parsed once from configuration. It
// lives apart from host/api so that the settings table (host/settings.ts) can check the setting
// without importing the HTTP room; host/api/client-address.ts decides what a trusted proxy may say.
import { BlockList, isIP } from 'node:net';
import { SandboxError } from './errors.ts';

/** The proxies whose X-Forwarded-For is believed; entries are `ip` or `ip/prefix`. */
export const trustedProxies = (entries: readonly string[]): BlockList => {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : isIP(address) === 4 ? 'ipv4' : undefined;
    const bits = prefix === undefined ? undefined : Number(prefix);
    const most = family === 'ipv6' ? 128 : 32;
    if (
      family === undefined ||
      (bits !== undefined && !(Number.isInteger(bits) && bits >= 0 && bits <= most))
    )
      throw new SandboxError(
        'CONFIG_INVALID',
        `A trusted proxy is an IP address or a subnet (ip/prefix), got "${entry}"`,
      );
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, bits, family);
  }
  return list;
};
