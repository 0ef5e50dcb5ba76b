// The clock of resources: Unix seconds, as every `created_at` of the interface (§2).

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
