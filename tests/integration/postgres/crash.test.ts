// The crash scenario of ../api/crash.test.ts, run again with the service on the PostgreSQL store.
import { usePostgresStore } from '../store-mode.ts';

usePostgresStore();
await import('../api/crash.test.ts');
