// An isolate host for benches that run no program (HTTP, MCP, transfers): starting the service
// without isolate workers keeps their processes out of the figures. Not a bench itself (bench/lib
// is not run by `npm run bench`).
import type { IsolateHost } from '../../host/isolates/index.ts';

export const noIsolates = {
  run: async () => {
    throw new Error('unused');
  },
  workerPids: () => [],
  close: async () => {},
} as unknown as IsolateHost;
