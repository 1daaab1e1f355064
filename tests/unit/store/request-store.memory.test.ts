import { runRequestStoreContract } from './request-store.contract.ts';
import { openMemoryRequestStore } from './request-store.harness.ts';

runRequestStoreContract('memory', openMemoryRequestStore);
