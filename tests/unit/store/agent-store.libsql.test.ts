import { runAgentStoreContract } from './agent-store.contract.ts';
import { libsqlAgentStoreHarness } from './harness.ts';

runAgentStoreContract(libsqlAgentStoreHarness);
