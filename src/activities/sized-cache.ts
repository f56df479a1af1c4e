/**
 * Values by key, the least recently used dropped first once what they take passes `budget` bytes (by
 * `sizeOf`, which counts whatever the caller wants counted). One value over the budget on its own is not
 * kept. What a worker keeps between activities (compiled policies, transcripts) is bounded this way.
 */
export class SizedCache<V> {
  private readonly entries = new Map<string, { value: V; bytes: number }>()
  private used = 0

  constructor(
    private readonly budget: number,
    private readonly sizeOf: (key: string, value: V) => number,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    this.entries.delete(key)
    this.entries.set(key, entry)
    return entry.value
  }

  set(key: string, value: V): void {
    this.delete(key)
    const bytes = this.sizeOf(key, value)
    if (bytes > this.budget) return
    this.entries.set(key, { value, bytes })
    this.used += bytes
    for (const oldest of this.entries.keys()) {
      if (this.used <= this.budget) break
      this.delete(oldest)
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key)
    if (!entry) return
    this.entries.delete(key)
    this.used -= entry.bytes
  }

  /** Bytes the kept values take, by `sizeOf`. */
  get bytes(): number {
    return this.used
  }
}
