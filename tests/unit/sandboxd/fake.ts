// A fake sandboxd whose every byte the test controls, for the hostile tests: it answers hello
// properly (after stale bytes of an old session and a RESYNC marker), offering streams unless told
// not to, then hands each request to `onRequest` with a way to send raw bytes to the host.
import { PassThrough } from 'node:stream';
import { type ConnectSandboxdOptions, connectSandboxd } from '../../../host/sandbox/sandboxd/client.ts';
import { encodeFrame, FrameDecoder, RESYNC_MARKER } from '../../../sandbox-wire/protocol.ts';

export const FAKE_ROOT = '/workspace';
export type Reply = (bytes: Buffer) => void;

export const fakeSandboxd = async (
  onRequest: (req: Record<string, unknown>, reply: Reply) => void,
  options: { streams?: number } & Partial<ConnectSandboxdOptions> = {},
) => {
  const { streams = 1, ...connect } = options;
  const toHost = new PassThrough();
  const fromHost = new PassThrough();
  const reply: Reply = (bytes) => {
    toHost.write(bytes);
  };
  const hello = { v: 1, pid: 1, root: FAKE_ROOT, node: 'v18.19.0', ...(streams ? { streams } : {}) };
  const decoder = new FrameDecoder({
    onMessage: (m) => {
      if (m.t === 'hello')
        reply(
          Buffer.concat([
            Buffer.from('stale bytes of an old session'),
            RESYNC_MARKER,
            encodeFrame({ t: 'hello', session: m.session, ...hello }),
          ]),
        );
      else if (m.t === 'req') onRequest(m, reply);
    },
    onData: () => {},
    onError: () => {},
  });
  fromHost.on('data', (b: Buffer) => decoder.push(b));
  const client = await connectSandboxd({
    input: toHost,
    output: fromHost,
    root: FAKE_ROOT,
    timeoutMs: 2000,
    callTimeoutMs: 2000,
    ...connect,
  });
  return { client, toHost, fromHost };
};
