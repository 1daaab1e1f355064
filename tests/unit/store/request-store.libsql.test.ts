import { runRequestStoreContract } from './request-store.contract.ts';
import { openLibsqlRequestStore } from './request-store.harness.ts';

runRequestStoreContract('libsql', openLibsqlRequestStore);
