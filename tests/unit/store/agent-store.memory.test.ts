import { runAgentStoreContract } from './agent-store.contract.ts';
import { memoryAgentStoreHarness } from './agent-store.harness.ts';

runAgentStoreContract(memoryAgentStoreHarness);
