// The daemon's side of its import thread (worker.ts): started on the first import, shared by the
// imports under way (each a job), given back to the OS a while after the last (with its tokenizer).
// A thread that dies fails the jobs it had; the next import starts another.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { FromThread, ImportJob, ToThread } from './messages';

/** How long an idle thread (and the tokenizer it loaded, ~1 s to load again) is kept. */
const IDLE_MS = 60_000;

/**
 * The thread's script: the sources' worker.ts through tsx where the daemon runs from its sources
 * (tests, bench), else the bundle's import-worker.js beside dist/cli.js (this code is in cli.js or
 * in a chunk of dist/chunks/).
 */
function startWorker(): Worker {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    const url = JSON.stringify(new URL('./worker.ts', here).href);
    const code = `import(${JSON.stringify(tsxApi(here))}).then((tsx) => { tsx.register(); return import(${url}); })`;
    return new Worker(code, { eval: true });
  }
  for (const candidate of ['./import-worker.js', '../import-worker.js']) {
    const file = fileURLToPath(new URL(candidate, here));
    if (existsSync(file)) return new Worker(file);
  }
  throw new Error('import-worker.js is not beside the daemon: run `npm run build`');
}

/** tsx's ESM API (its package's `./esm/api` import entry: the CommonJS one cannot be imported). */
function tsxApi(from: string): string {
  const pkg = createRequire(from).resolve('tsx/package.json');
  const entry = JSON.parse(readFileSync(pkg, 'utf8')).exports['./esm/api'].import.default;
  return pathToFileURL(join(dirname(pkg), entry)).href;
}

/** One import's messages from the thread, in order, and its answers to them. */
export class ImportThreadJob {
  private readonly queue: FromThread[] = [];
  private waiting: ((m: FromThread) => void) | null = null;

  constructor(
    readonly id: number,
    private readonly send: (m: ToThread) => void,
    private readonly ended: () => void,
  ) {}

  /** The thread's next message for this job. */
  next(): Promise<FromThread> {
    const m = this.queue.shift();
    if (m) return Promise.resolve(m);
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  deliver(m: FromThread): void {
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) waiting(m);
    else this.queue.push(m);
  }

  go(): void {
    this.send({ type: 'go', id: this.id });
  }
  /** Ends the job here (the thread sends no more of it). */
  stop(): void {
    this.send({ type: 'stop', id: this.id });
    this.ended();
  }
  stored(): void {
    this.send({ type: 'stored', id: this.id });
  }
}

/** One started thread and the jobs it holds; it unrefs itself when idle and ends IDLE_MS later. */
class ImportThread {
  readonly jobs = new Map<number, ImportThreadJob>();
  dead = false;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(readonly worker: Worker) {
    worker.on('message', (m: FromThread) => {
      this.jobs.get(m.id)?.deliver(m);
      if (m.type === 'done' || m.type === 'failed' || m.type === 'bad_model' || m.type === 'unreadable')
        this.end(m.id);
    });
    worker.on('error', (err) => this.died(err.message));
    worker.on('exit', (code) => this.died(`it exited (code ${code})`));
  }

  start(job: Omit<ImportJob, 'id'>): ImportThreadJob {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.worker.ref();
    const id = ++lastId;
    const handle = new ImportThreadJob(
      id,
      (m) => this.worker.postMessage(m),
      () => this.end(id),
    );
    this.jobs.set(id, handle);
    this.worker.postMessage({ type: 'job', job: { ...job, id } } satisfies ToThread);
    return handle;
  }

  private end(id: number): void {
    if (!this.jobs.delete(id) || this.jobs.size || this.dead) return;
    this.worker.unref();
    this.idleTimer = setTimeout(() => {
      this.dead = true;
      void this.worker.terminate();
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  private died(why: string): void {
    this.dead = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    for (const [id, job] of this.jobs) {
      this.jobs.delete(id);
      job.deliver({ id, type: 'failed', error: `the import thread stopped: ${why}` });
    }
  }
}

let current: ImportThread | null = null;
let lastId = 0;

/** Starts an import in the thread: it answers with the session first (ImportThreadJob.next). */
export function startImportJob(job: Omit<ImportJob, 'id'>): ImportThreadJob {
  if (!current || current.dead) current = new ImportThread(startWorker());
  return current.start(job);
}

/** Ends the thread now (tests). Jobs under way fail. */
export async function stopImportThread(): Promise<void> {
  const thread = current;
  current = null;
  if (thread) {
    thread.dead = true;
    await thread.worker.terminate();
  }
}
