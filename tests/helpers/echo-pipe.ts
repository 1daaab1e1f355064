// A pipe that answers every byte written with the same byte: sandboxd stands in as an echo, for the
// node protocol's tests (tests/unit/sandbox/node-*.test.ts) that carry bytes without an engine.
import { PassThrough } from 'node:stream';
import type { SandboxdPipe } from '../../host/sandbox/nodes/types.ts';

export const echoPipe = (): SandboxdPipe => {
  const p = new PassThrough();
  let close = (): void => {};
  const closed = new Promise<void>((resolve) => {
    close = resolve;
  });
  return {
    input: p,
    output: p,
    closed,
    close: () => {
      p.destroy();
      close();
    },
  };
};
