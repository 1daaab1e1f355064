// The tenant deletion scenario of ../api/tenant-deletion.test.ts, run again with the service on the PostgreSQL store.
import { usePostgresStore } from '../store-mode.ts';

usePostgresStore();
await import('../api/tenant-deletion.test.ts');
