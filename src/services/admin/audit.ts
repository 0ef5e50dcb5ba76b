// D-75: the team's audit log as the admin surface reads it, newest first, a page at a time.
import type { z } from 'zod';
import { type AuditQuery, listPage } from '../../contract/admin.ts';
import type { AdminCaller } from '../../core/callers.ts';
import type { ControlPlane } from '../../store/control.ts';

/** A page's size when the query names none. */
const DEFAULT_PAGE = 20;

export class AuditService {
  constructor(private readonly control: ControlPlane) {}

  /** The caller's team's entries only (D-65); the team is the caller's, so an entry does not repeat it. */
  async list(c: AdminCaller, q: z.infer<typeof AuditQuery>) {
    const page = await this.control.audit.list({ ...q, team_id: c.team_id, limit: q.limit ?? DEFAULT_PAGE });
    return listPage(
      page.data.map((a) => ({ object: 'audit_entry', ...a, team_id: undefined })),
      page.has_more,
    );
  }
}
