// A GET on a keep-alive connection of its own, left open after its answer (the connection counts
// against the server's caps until the test ends it): its status, or the socket's error code
// (ECONNRESET when the server closed it on arrival).
import { Agent, request } from 'node:http';

export const heldGet = (url: string, headers: Record<string, string> = {}): Promise<number | string> =>
  new Promise((resolve) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const req = request(url, { agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (error) => resolve((error as NodeJS.ErrnoException).code ?? error.message));
    req.end();
  });
