// The replicas' view of a tenant's quotas on libsql: two stores on one database file
// (./quota-replicas.contract.ts says what is held).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../../host/store/index.ts';
import { runQuotaReplicasContract } from './quota-replicas.contract.ts';

let dir: string | undefined;
runQuotaReplicasContract(
  async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-quotas-'));
    const path = join(dir, 'store.db');
    return async (now) => openStore({ path, now, eventBatchWindowMs: 0 });
  },
  async () => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  },
);
