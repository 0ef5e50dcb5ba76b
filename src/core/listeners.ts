// Listeners kept per key (a response's cancel listeners): both stores keep them the same way.

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
