import { libsqlRequestStoreHarness } from './harness.ts';
import { runRequestStoreContract } from './request-store.contract.ts';

runRequestStoreContract(libsqlRequestStoreHarness);
