/**
 * A queue per key in this process: `run(key, fn)` starts `fn` after the calls queued before it under the same
 * key have settled (whether they resolved or threw), and an idle key holds nothing. Each caller makes its own
 * (createKeyedQueue), so one queue's work may itself wait on another's without waiting on itself.
 * Hand-written: a promise chain per key is a few lines; the queue libraries (p-queue, async) order one queue,
 * not one per key, and would still need this map around them.
 */
export function createKeyedQueue(): <T>(key: string, fn: () => Promise<T>) => Promise<T> {
  const queues = new Map<string, Promise<unknown>>();
  return <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const prev = queues.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    queues.set(key, tail);
    void tail.then(() => {
      if (queues.get(key) === tail) queues.delete(key);
    });
    return next;
  };
}
