import { runAgentStoreContract } from './agent-store.contract.ts';
import { memoryAgentStoreHarness } from './harness.ts';

runAgentStoreContract(memoryAgentStoreHarness);
