// A sleep that an abort signal cuts short, and an error's message: shared by the worker modules.

/** Resolves after `ms`, or as soon as `signal` aborts (never rejects). */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
