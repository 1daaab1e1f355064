// The API scenario of ../api/snapshots.test.ts, run again with the service on the PostgreSQL store (issue 36).
import { usePostgresStore } from '../store-mode.ts';

usePostgresStore();
await import('../api/snapshots.test.ts');
