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
 * D-91: the store is out of reach (PostgreSQL restarting, a connection cut): nothing is wrong with the
 * request, it may be retried once the store is back (503 `store_unavailable`).
 */
export class StoreUnavailable extends Error {
  constructor(detail = 'the store is out of reach') {
    super(detail);
    this.name = 'StoreUnavailable';
  }
}
