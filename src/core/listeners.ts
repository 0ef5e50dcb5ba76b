// Listeners kept per key (a response's cancel listeners) or in one list (the webhook outbox's): both
// stores keep them the same way.

/** Adds `listener` under `key`; the function returned removes it, and the key once it has none left. */
export function listenOn<K, L>(map: Map<K, Set<L>>, key: K, listener: L): () => void {
  const set = map.get(key) ?? new Set<L>();
  set.add(listener);
  map.set(key, set);
  return () => {
    set.delete(listener);
    if (set.size === 0 && map.get(key) === set) map.delete(key);
  };
}

/** A list of listeners told in the order they were added; `add` returns the function that removes one. */
export class Listeners<T> {
  private readonly fns = new Set<(value: T) => void>();

  add(fn: (value: T) => void): () => void {
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }

  tell(value: T): void {
    for (const fn of this.fns) fn(value);
  }
}
