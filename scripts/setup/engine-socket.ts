// The two questions every `npm start` asks the Docker engine (which version answers; is the
// sandbox image there), asked with node:http over the engine's unix socket rather than through
// dockerode, whose import alone takes 170-300 ms of the launcher's start. Only for the default
// socket or a unix:// DOCKER_HOST: any other DOCKER_HOST (tcp with TLS, ssh) answers `undefined`
// and the caller asks dockerode, as it does for everything past these two questions.
// Invariants: never throws; `undefined` means "this path cannot tell", never "no".

import { request } from 'node:http';

/** The engine's unix socket, or undefined when DOCKER_HOST names anything else. */
export const engineSocket = (host = process.env.DOCKER_HOST): string | undefined => {
  if (!host) return '/var/run/docker.sock';
  return host.startsWith('unix://') ? host.slice('unix://'.length) : undefined;
};

/** GET `path` on the engine: its status and body, or undefined when it did not answer in time. */
const get = (socketPath: string, path: string, timeoutMs: number) =>
  new Promise<{ status: number; body: string } | undefined>((resolve) => {
    const req = request({ socketPath, path, method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(undefined));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });

/** What GET /version answers (the fields setup reads). */
export interface EngineVersion {
  Version: string;
  ApiVersion: string;
  Components?: Array<{ Name: string; Version: string }>;
}

/** The engine's version through its socket; undefined when there is no socket to ask or no answer. */
export const socketVersion = async (socket = engineSocket()): Promise<EngineVersion | undefined> => {
  if (socket === undefined) return undefined;
  const answer = await get(socket, '/version', 3000);
  if (answer?.status !== 200) return undefined;
  try {
    const version = JSON.parse(answer.body) as EngineVersion;
    return typeof version.Version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
};

/** Whether the engine has image `name` (true or false), or undefined when the socket cannot tell. */
export const socketImageExists = async (
  name: string,
  socket = engineSocket(),
): Promise<boolean | undefined> => {
  if (socket === undefined) return undefined;
  const answer = await get(socket, `/images/${encodeURIComponent(name)}/json`, 10_000);
  if (answer?.status === 200) return true;
  if (answer?.status === 404) return false;
  return undefined;
};
