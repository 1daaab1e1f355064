import { memoryRequestStoreHarness } from './harness.ts';
import { runRequestStoreContract } from './request-store.contract.ts';

runRequestStoreContract(memoryRequestStoreHarness);
