// The API scenario of ../api/team-board.test.ts, run again with the service on the PostgreSQL store (issue 30).
import { usePostgresStore } from '../store-mode.ts';

usePostgresStore();
await import('../api/team-board.test.ts');
