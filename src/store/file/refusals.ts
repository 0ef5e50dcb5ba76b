// D-157's refused requests in the data directory (`refusals.jsonl`): each line adds `n` refusals of an
// app on a UTC day for a reason; the sums are kept in memory. Lines come at most once every FLUSH_MS
// per (app, day, reason) (src/store/refusals.ts), and the journal is rewritten as one line per sum once
// it holds many more lines than sums. PostgreSQL's twin is src/store/pg/refusals.ts.
import path from 'node:path';
import { z } from 'zod';
import {
  addRows,
  inSpan,
  REFUSAL_REASONS,
  RefusalBuffer,
  type RefusalLedger,
  type RefusalReason,
  type RefusedDayRow,
  todayOf,
} from '../refusals.ts';
import { Journal } from './journal.ts';

const Line = z.object({
  app_id: z.string(),
  day: z.number().int().nonnegative(),
  reason: z.enum(REFUSAL_REASONS),
  n: z.number().int().positive(),
});

/** The journal is rewritten once it has this many lines and four times as many as sums. */
const COMPACT_AFTER = 1_000;

export class FileRefusals implements RefusalLedger {
  private readonly journal: Journal;
  /** Every count, written or not: what the report reads. */
  private readonly sums = new Map<string, RefusedDayRow>();
  /** The counts in the journal: what a compaction writes (the others come with the buffer's next write). */
  private readonly written = new Map<string, RefusedDayRow>();
  private readonly buffer: RefusalBuffer;

  private constructor(dataDir: string, warn: (message: string) => void) {
    this.journal = new Journal(path.join(path.resolve(dataDir), 'refusals.jsonl'));
    this.buffer = new RefusalBuffer(
      (rows) => this.write(rows),
      (err) => warn(`refused-request counts not written (${(err as Error).message}); they are lost`),
    );
  }

  /** Reads `<data dir>/refusals.jsonl`; a line it cannot read is skipped (a count, not billing). */
  static async open(dataDir: string, warn: (message: string) => void): Promise<FileRefusals> {
    const ledger = new FileRefusals(dataDir, warn);
    let skipped = 0;
    await ledger.journal.open((entry) => {
      const parsed = Line.safeParse(entry);
      if (parsed.success) {
        addRows(ledger.sums, [parsed.data]);
        addRows(ledger.written, [parsed.data]);
      } else skipped++;
    });
    if (skipped) warn(`${ledger.journal.file}: ${skipped} line(s) skipped that are not counts of refused requests`);
    return ledger;
  }

  count(appId: string, reason: RefusalReason): void {
    // Counted in memory at once (the report reads memory); the line comes with the buffer's write.
    const day = todayOf();
    addRows(this.sums, [{ app_id: appId, day, reason, n: 1 }]);
    this.buffer.add(appId, reason, day);
  }

  async days(appIds: readonly string[], since: number, until: number): Promise<RefusedDayRow[]> {
    return inSpan(this.sums.values(), appIds, since, until);
  }

  async close(): Promise<void> {
    await this.buffer.flush();
    await this.journal.drain();
    await this.journal.close();
  }

  private async write(rows: RefusedDayRow[]): Promise<void> {
    for (const r of rows) await this.journal.append(r, () => addRows(this.written, [r]));
    if (this.journal.lines >= COMPACT_AFTER && this.journal.lines > 4 * this.written.size)
      await this.journal.compact(() => [...this.written.values()]);
  }
}
