// A child process the node agent owns (`--vllm-cmd`, `--trainer-cmd`): started through the shell,
// restarted with backoff when it exits, its last stderr lines kept for the error it reports.
import { type ChildProcess, spawn } from 'node:child_process';

export interface SupervisedOptions {
  command: string;
  name: string;
  log: (message: string, detail?: Record<string, unknown>) => void;
  env?: NodeJS.ProcessEnv;
  /** stdio of the child: 'pipe' for stdin/stdout when the agent talks to it. */
  pipeStdio?: boolean;
  /** Called with each new child (after every (re)start). */
  onStart?: (child: ChildProcess) => void;
  onExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

export class Supervised {
  child: ChildProcess | null = null;
  restarts = 0;
  lastError: string | null = null;
  private stopping = false;
  private tail: string[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly options: SupervisedOptions) {}

  start(): void {
    if (this.stopping) return;
    const { command, name, log } = this.options;
    const child = spawn('/bin/sh', ['-c', `exec ${command}`], {
      env: { ...process.env, ...this.options.env },
      stdio: [
        this.options.pipeStdio ? 'pipe' : 'ignore',
        this.options.pipeStdio ? 'pipe' : 'inherit',
        'pipe',
      ],
    });
    this.child = child;
    child.stderr?.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      this.tail.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      this.tail = this.tail.slice(-20);
    });
    child.on('error', (err) => {
      this.lastError = `${name} could not start: ${err.message}`;
    });
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      this.options.onExit?.(code, signal);
      if (this.stopping) return;
      this.lastError = `${name} exited (${signal ?? `code ${code}`})${this.tail.length ? `: ${this.tail.slice(-3).join(' | ')}` : ''}`;
      this.restarts++;
      const delay = Math.min(30_000, 500 * 2 ** Math.min(this.restarts - 1, 6));
      log(`${name} exited; restarting`, { code, signal, in_ms: delay, restarts: this.restarts });
      this.timer = setTimeout(() => this.start(), delay);
    });
    this.options.onStart?.(child);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}
