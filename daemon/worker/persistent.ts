// A persistent harness (`harness.mode: persistent`): its command starts once per concurrency slot and
// takes rollouts one after another over stdin (protocol/persistent.ts), so a rollout costs no process
// start (node, a TypeScript loader, the SDK's imports) and its HTTP clients keep their connections. A
// process that dies while it holds a rollout fails that attempt as infrastructure (harness_crashed) and
// the next rollout starts a new one; one whose rollout is aborted (deadline, cancel) is killed. Each
// process runs in the run's sandbox (harness.sandbox: bubblewrap, or a container of its own that lives
// as long as the process), opened when it starts and closed when it ends.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { errorText } from '../error-text';
import { AttemptFailedError, harnessFailure, infrastructure } from '../protocol/failures';
import { PERSISTENT_ENV, PersistentResult, type PersistentRollout } from '../protocol/persistent';
import type { HarnessSandbox } from '../protocol/placement';
import type { RolloutContext, RolloutOutcome } from '../protocol/worker';
import { rolloutEnv, STDOUT_TAIL } from './command';
import { type OpenSandbox, openSandbox } from './sandbox';

const STDERR_TAIL = 4000;

interface Pending {
  rolloutId: string;
  stdout: string;
  onOutput?: (chunk: string) => void;
  resolve(result: PersistentResult): void;
  reject(err: Error): void;
}

/** One running harness process: the rollout it holds, and its stdout cut into lines. */
class HarnessProcess {
  readonly child: ChildProcess;
  pending: Pending | null = null;
  exited = false;
  private partial = '';
  private stderr = '';

  constructor(argv: string[], cwd: string | undefined, env: NodeJS.ProcessEnv) {
    this.child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    this.child.stdin!.on('error', () => {});
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.onStdout(chunk));
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL);
      this.pending?.onOutput?.(chunk);
    });
    this.child.on('error', (err) =>
      this.die(new AttemptFailedError(`could not start ${argv[0]}: ${err.message}`, harnessFailure('exit'))),
    );
    this.child.on('close', (code, signal) => {
      const tail = this.stderr.trim().split('\n').slice(-20).join('\n');
      const how = code !== null ? `exit code ${code}` : `signal ${signal}`;
      this.die(
        new AttemptFailedError(
          `the persistent harness process ended (${how}) while it ran the rollout; it is started again${tail ? `: ${tail}` : ''}`,
          infrastructure('harness_crashed'),
        ),
      );
    });
  }

  private die(err: Error): void {
    this.exited = true;
    const pending = this.pending;
    this.pending = null;
    pending?.reject(err);
  }

  private onStdout(chunk: string): void {
    this.partial += chunk;
    let newline = this.partial.indexOf('\n');
    while (newline >= 0) {
      const line = this.partial.slice(0, newline);
      this.partial = this.partial.slice(newline + 1);
      this.onLine(line);
      newline = this.partial.indexOf('\n');
    }
    if (this.partial.length > STDOUT_TAIL) {
      const long = this.partial;
      this.partial = '';
      this.onLine(long);
    }
  }

  private onLine(line: string): void {
    const pending = this.pending;
    const answer = pending && line.includes(pending.rolloutId) ? answerOf(line, pending.rolloutId) : null;
    if (pending && answer) {
      this.pending = null;
      pending.resolve(answer);
      return;
    }
    if (!pending) return;
    pending.stdout = (pending.stdout + line + '\n').slice(-STDOUT_TAIL);
    pending.onOutput?.(`${line}\n`);
  }

  run(
    message: PersistentRollout,
    onOutput?: (chunk: string) => void,
  ): Promise<PersistentResult & { stdout: string }> {
    return new Promise((resolve, reject) => {
      const pending: Pending = {
        rolloutId: message.rollout_id,
        stdout: '',
        onOutput,
        resolve: (result) => resolve({ ...result, stdout: pending.stdout }),
        reject,
      };
      if (this.exited) {
        reject(
          new AttemptFailedError(
            'the persistent harness process had ended',
            infrastructure('harness_crashed'),
          ),
        );
        return;
      }
      this.pending = pending;
      this.child.stdin!.write(`${JSON.stringify(message)}\n`);
    });
  }

  /** SIGTERM to its process group, SIGKILL 2 s later. */
  kill(): void {
    const signal = (sig: NodeJS.Signals) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null || !this.child.pid) return;
      try {
        if (process.platform !== 'win32') process.kill(-this.child.pid, sig);
        else this.child.kill(sig);
      } catch {
        this.child.kill(sig);
      }
    };
    signal('SIGTERM');
    setTimeout(() => signal('SIGKILL'), 2000).unref();
  }
}

/** The harness's answer in a stdout line, when the line is one for this rollout. */
function answerOf(line: string, rolloutId: string): PersistentResult | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  const parsed = PersistentResult.safeParse(value);
  return parsed.success && parsed.data.rollout_id === rolloutId ? parsed.data : null;
}

/** The processes of one persistent harness command: as many as rollouts run at once, reused. */
export class PersistentHarness {
  private readonly idle: HarnessProcess[] = [];
  private readonly all = new Set<HarnessProcess>();
  /** The sandboxes of processes that ended, being closed (close() waits for them). */
  private readonly closing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly argv: string[],
    private readonly options: {
      cwd?: string;
      env?: NodeJS.ProcessEnv;
      /** Default: the claim's (the run's harness.sandbox), else none. */
      sandbox?: HarnessSandbox;
    } = {},
  ) {
    if (argv.length === 0) throw new Error('no harness command given');
  }

  /** How many harness processes were started so far (restarts included). */
  started = 0;

  private async take(ctx: RolloutContext): Promise<HarnessProcess> {
    for (let p = this.idle.pop(); p; p = this.idle.pop()) if (!p.exited) return p;
    const env = { ...this.options.env, [PERSISTENT_ENV]: '1' };
    let box: OpenSandbox;
    try {
      box = await openSandbox(this.options.sandbox ?? ctx.sandbox ?? 'none', {
        // Named for the process, not the attempt: it outlives its first rollout.
        attemptId: `persistent${process.pid}${this.started}${randomBytes(4).toString('hex')}`,
        argv: this.argv,
        cwd: this.options.cwd ?? process.cwd(),
        envKeys: Object.keys(env),
        daemonUrl: ctx.daemonUrl,
        timeoutS: ctx.timeout_s,
        persistent: true,
      });
    } catch (err) {
      throw new AttemptFailedError(
        `sandbox did not start: ${errorText(err)}`,
        infrastructure('sandbox_start'),
      );
    }
    const p = new HarnessProcess(box.argv, this.options.cwd, { ...process.env, ...env });
    this.started++;
    this.all.add(p);
    p.child.on('close', () => {
      this.all.delete(p);
      const closed: Promise<void> = box
        .close()
        .catch(() => {})
        .finally(() => this.closing.delete(closed));
      this.closing.add(closed);
    });
    return p;
  }

  /**
   * Run one rollout on an idle process (or a new one); `onOutput` gets its stdout and stderr, `env`
   * goes with the rollout's own variables (an evaluation's HARNESS_RL_SEED).
   */
  async rollout(
    ctx: RolloutContext,
    onOutput?: (chunk: string) => void,
    env?: Record<string, string>,
  ): Promise<RolloutOutcome> {
    if (this.closed) throw new AttemptFailedError('the worker stopped', infrastructure('worker_stopped'));
    const proc = await this.take(ctx);
    const onAbort = () => proc.kill();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await proc.run(
        {
          rollout_id: ctx.rollout.id,
          attempt_id: ctx.attempt.id,
          task: ctx.input ?? null,
          model: ctx.model,
          env: { ...rolloutEnv(ctx), ...env },
        },
        onOutput,
      );
      if ('error' in result)
        throw new AttemptFailedError(
          `harness: ${result.error}`,
          result.infrastructure ? infrastructure('reported') : harnessFailure('error'),
        );
      return { reward: result.reward, stdout: result.stdout };
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      if (!proc.exited && !ctx.signal.aborted && !this.closed) this.idle.push(proc);
      else if (!proc.exited) proc.kill();
    }
  }

  /** Stop every process: stdin closed (a harness that reads it ends), then its process group killed. */
  async close(): Promise<void> {
    this.closed = true;
    const waits = [...this.all].map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.exited) return resolve();
          p.child.once('close', () => resolve());
          p.child.stdin!.end();
          const timer = setTimeout(() => p.kill(), 1000);
          timer.unref();
          p.child.once('close', () => clearTimeout(timer));
        }),
    );
    this.idle.length = 0;
    await Promise.all(waits);
    await Promise.all([...this.closing]);
  }
}
