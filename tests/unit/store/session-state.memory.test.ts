import { createMemorySessionStateStore } from '../../../host/store/session-state.ts';
import { runSessionStateContract } from './session-state.contract.ts';

runSessionStateContract('memory', async () => ({ store: createMemorySessionStateStore(), close: () => {} }));
