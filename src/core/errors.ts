// Errors raised below the HTTP layer, which the layers above turn into answers or start-up failures.

/** A data file that cannot be read as it should be: the message names the file and the fault. */
export class DataFileError extends Error {
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
    this.name = 'DataFileError';
  }
}

/** D-36: a resume after the events' retention. */
export class ResponseEventsExpired extends Error {
  constructor(readonly id: string) {
    super(`the events of ${id} are no longer kept`);
    this.name = 'ResponseEventsExpired';
  }
}

/**
 * D-94: names the file an fs error was about when node did not (an error of write(2) or fsync carries
 * no path), so that start-up's reason names it: `withFile(err, file)` sets `path` and returns it;
 * `.catch(atFile(file))` throws it on so named.
 */
export function withFile<E>(err: E, file: string): E {
  const e = err as NodeJS.ErrnoException | undefined;
  if (e && typeof e.code === 'string' && e.path === undefined) e.path = file;
  return err;
}

export function atFile(file: string): (err: unknown) => never {
  return (err) => {
    throw withFile(err, file);
  };
}

/**
 * D-151: what the configuration chose needs a package that is not installed (an optional dependency
 * that did not install): the message names what to install, or what to choose instead.
 */
export class MissingDependency extends Error {
  constructor(
    readonly pkg: string,
    detail: string,
  ) {
    super(detail);
    this.name = 'MissingDependency';
  }
}

/** Why a file could not be written, in the operator's words, by errno code. */
const WRITE_FAULTS: Record<string, string> = {
  ENOSPC: 'no space left on the device (ENOSPC); free some space, or choose another --data-dir',
  EDQUOT: 'the disk quota is used up (EDQUOT); free some space, or choose another --data-dir',
};

/**
 * The one-line reason a start-up failure gives for what the operator must fix (a bad data directory
 * or fixtures file, a full disk, a port in use, a driver not installed), naming the file when there is one; undefined for
 * anything else (a bug, which keeps its stack trace).
 */
export function startupReason(err: unknown): string | undefined {
  if (err instanceof DataFileError || err instanceof MissingDependency) return err.message;
  const e = err as NodeJS.ErrnoException;
  if (typeof e?.code !== 'string') return undefined;
  const fault = WRITE_FAULTS[e.code];
  if (e.path === undefined) return fault ?? e.message;
  return `${e.path}: ${fault ?? e.message.replace(`, ${e.syscall} '${e.path}'`, '')}`;
}

/**
 * D-91: the store is out of reach (PostgreSQL restarting, a connection cut): nothing is wrong with the
 * request, it may be retried once the store is back (503 `store_unavailable`).
 */
export class StoreUnavailable extends Error {
  constructor(detail = 'the store is out of reach') {
    super(detail);
    this.name = 'StoreUnavailable';
  }
}
