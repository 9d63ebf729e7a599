// The import thread (a worker thread the daemon starts, thread.ts): reads a session file, parses it and
// tokenizes its calls here, so the daemon's event loop (its proxy) never waits for a file's parse, a
// template rendering or a tokenizer load. It sends the calls one by one; the daemon stores them.
import { parentPort } from 'node:worker_threads';
import { errorText } from '../error-text';
import { readSessionText } from './files';
import type { FromThread, ImportJob, ToThread } from './messages';
import { WINDOW } from './messages';
import { readSession } from './read';
import {
  endOfTurnIds,
  type ImportTokenizer,
  importTokenizer,
  sessionRenderer,
  tokenizeCall,
} from './tokenize';

const port = parentPort;
if (!port)
  throw new Error('daemon/import/worker.ts runs as a worker thread (daemon/import/thread.ts starts it)');

/** What the daemon said of a job so far: its answer to the session, and how many calls it stored. */
class Control {
  decision: Promise<'go' | 'stop'>;
  stopped = false;
  private decide: (d: 'go' | 'stop') => void = () => {};
  private sent = 0;
  private stored = 0;
  private wake: (() => void) | null = null;

  constructor() {
    this.decision = new Promise((resolve) => {
      this.decide = resolve;
    });
  }

  on(message: ToThread): void {
    if (message.type === 'go' || message.type === 'stop') {
      this.stopped ||= message.type === 'stop';
      this.decide(message.type);
    }
    if (message.type === 'stored') this.stored++;
    if (message.type === 'stop' || message.type === 'stored') this.wake?.();
  }

  /** Resolves once fewer than WINDOW calls sent are unstored (or the daemon stopped the job). */
  async room(): Promise<void> {
    while (!this.stopped && this.sent - this.stored >= WINDOW)
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    this.wake = null;
  }

  sentOne(): void {
    this.sent++;
  }
}

const jobs = new Map<number, Control>();

function post(message: FromThread, transfer: ArrayBuffer[] = []): void {
  port?.postMessage(message, transfer);
}

async function run(job: ImportJob, control: Control): Promise<void> {
  const id = job.id;
  let tokenizer: ImportTokenizer;
  try {
    tokenizer = importTokenizer(job.model, job.folder ? { [job.model]: job.folder } : {});
  } catch (err) {
    return post({ id, type: 'bad_model', error: errorText(err) });
  }
  let text: string;
  try {
    text = await readSessionText(job.path);
  } catch (err) {
    return post({ id, type: 'unreadable', error: `cannot read ${job.path}: ${(err as Error).message}` });
  }
  const { calls, ...session } = readSession(job.source, text, job.path);
  const models = [...new Set(calls.map((c) => c.model).filter((m) => m !== null))];
  post({ id, type: 'session', session, models, calls: calls.length });
  if ((await control.decision) === 'stop') return;
  const endIds = await endOfTurnIds(tokenizer);
  const render = sessionRenderer(tokenizer);
  for (const { request, ...call } of calls) {
    await control.room();
    if (control.stopped) return;
    let tokens: Awaited<ReturnType<typeof tokenizeCall>>;
    try {
      tokens = await tokenizeCall(render, { request, ...call }, endIds);
    } catch (err) {
      post({ id, type: 'skipped', line: call.line, error: (err as Error).message });
      continue;
    }
    const prompt_ids = Int32Array.from(tokens.prompt_ids);
    const response_ids = Int32Array.from(tokens.response_ids);
    const message = { call, request_text: JSON.stringify(request), prompt_ids, response_ids };
    post({ id, type: 'call', ...message, diverged: tokens.diverged }, [
      prompt_ids.buffer,
      response_ids.buffer,
    ]);
    control.sentOne();
  }
  post({ id, type: 'done' });
}

port.on('message', (message: ToThread) => {
  if (message.type !== 'job') return jobs.get(message.id)?.on(message);
  const control = new Control();
  jobs.set(message.job.id, control);
  run(message.job, control)
    .catch((err) => post({ id: message.job.id, type: 'failed', error: errorText(err) }))
    .finally(() => jobs.delete(message.job.id));
});
