// The audit retention's cases (D-75) for test/audit-retention.test.ts (file store) and
// test/proof/pg-audit-retention.test.ts (PostgreSQL): entries of 100 and 10 days ago, written by a
// control plane whose clock says so, then a server started with a retention.
import type { AuditLog } from '../../src/store/control.ts';
import { draft } from './control-suite.ts';
import { startTestServer } from './helpers.ts';

const DAY = 86_400_000;

/** Entries of 100 days and of 10 days ago, written by a control plane whose clock says so. */
export async function writeOld(open: (now: () => number) => Promise<{ audit: Pick<AuditLog, 'append'>; close(): Promise<void> }>) {
  for (const [age, action] of [
    [100, 'test.hundred_days'],
    [10, 'test.ten_days'],
  ] as const) {
    const c = await open(() => Date.now() - age * DAY);
    try {
      await c.audit.append([draft('team_demo', action)]);
    } finally {
      await c.close();
    }
  }
}

export async function actionsAfterStart(where: { dataDir: string; databaseUrl?: string }, days?: number): Promise<string[]> {
  const server = await startTestServer({ ...where, ...(days === undefined ? {} : { auditRetentionDays: days }) });
  try {
    const page = await server.control.audit.list({ team_id: 'team_demo', limit: 100 });
    return page.data.map((a) => a.action).filter((a) => a.startsWith('test.'));
  } finally {
    await server.close();
  }
}
