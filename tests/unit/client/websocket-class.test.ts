// The client's WebSocket option takes the standard class (the global one of browsers and Node 22+)
// and the `ws` package's (for Node 20 and 21) as they are; checked by tsc, which runs over tests/.

import { describe, expectTypeOf, it } from 'vitest';
import { WebSocket as Ws } from 'ws';
import type { DshClientOptions } from '../../../client/index.ts';

describe('the WebSocket option', () => {
  it('takes the global WebSocket class and the ws package one', () => {
    expectTypeOf(globalThis.WebSocket).toExtend<NonNullable<DshClientOptions['WebSocket']>>();
    expectTypeOf(Ws).toExtend<NonNullable<DshClientOptions['WebSocket']>>();
  });
});
