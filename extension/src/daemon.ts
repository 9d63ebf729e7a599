// Finds a running daemon (harnessRl.daemonUrl + token in SecretStorage or <dataFolder>/token) or
// starts one as a child process, restarting it after a crash up to harnessRl.maxRestarts times.
// While none is connected it looks for one every few seconds, so a daemon started outside VS Code
// (a terminal's `harness-rl daemon`) is picked up without a click.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { DAEMON_NODE_FLAGS } from '../../daemon/cli/node-flags';
import { DaemonClient, errorText } from './client';

/** `found`: a daemon answers at the URL but takes none of the tokens this window knows. */
export type DaemonState = 'stopped' | 'starting' | 'running' | 'failed' | 'found';

const TOKEN_KEY = 'harnessRl.token';
/** How often a window with no daemon looks for one. */
const LOOK_EVERY_MS = 2_000;

export function dataFolder(): string {
  const configured = vscode.workspace.getConfiguration('harnessRl').get<string>('dataFolder', '');
  return configured ? expandHome(configured) : path.join(homedir(), '.harness-rl');
}

export function daemonUrl(): string {
  return vscode.workspace.getConfiguration('harnessRl').get<string>('daemonUrl', 'http://127.0.0.1:4100');
}

function expandHome(p: string): string {
  return p.startsWith('~') ? path.join(homedir(), p.slice(1)) : p;
}

/** The argv that starts `harness-rl`: setting, then the workspace's CLI, then PATH. */
export function resolveCli(): { command: string; args: string[] } {
  const configured = vscode.workspace.getConfiguration('harnessRl').get<string>('cliPath', '');
  const candidates = configured
    ? [expandHome(configured)]
    : (vscode.workspace.workspaceFolders ?? []).flatMap((f) => [
        path.join(f.uri.fsPath, 'node_modules', '.bin', 'harness-rl'),
        path.join(f.uri.fsPath, 'bin', 'harness-rl.js'),
      ]);
  for (const c of candidates) {
    if (configured || existsSync(c)) {
      return /\.[cm]?js$/.test(c)
        ? { command: 'node', args: [...DAEMON_NODE_FLAGS, c] }
        : { command: c, args: [] };
    }
  }
  return { command: 'harness-rl', args: [] };
}

export class DaemonManager implements vscode.Disposable {
  private child: ChildProcess | undefined;
  private restarts = 0;
  private stopping = false;
  /** Set when the person disconnected: stop looking until they start or connect again. */
  private disconnected = false;
  /** The tokens (and token file) a found daemon refused; looked at again only when they change. */
  private refusedTokens: string | undefined;
  private readonly finder = setInterval(() => void this.lookForDaemon(), LOOK_EVERY_MS);
  /** Why the last start failed, in words (`spawn harness-rl ENOENT`, the daemon's last error line). */
  lastError: string | undefined;
  private _state: DaemonState = 'stopped';
  private _client: DaemonClient | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<DaemonState>();
  readonly onDidChangeState = this.stateEmitter.event;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly log: vscode.OutputChannel,
  ) {}

  get state(): DaemonState {
    return this._state;
  }
  get client(): DaemonClient | undefined {
    return this._state === 'running' ? this._client : undefined;
  }
  /** Whether the daemon is a child of this window (stopped on deactivate). */
  get owned(): boolean {
    return this.child !== undefined;
  }

  private setState(s: DaemonState) {
    if (this._state === s) return;
    this._state = s;
    this.stateEmitter.fire(s);
  }

  /** Whether anything answers GET /api/health at harnessRl.daemonUrl (no token needed). */
  async probe(): Promise<boolean> {
    try {
      await new DaemonClient(daemonUrl(), '', 1_000).health();
      return true;
    } catch {
      return false;
    }
  }

  /** Connects to a daemon that appeared at the URL (started elsewhere), once per set of known tokens. */
  private async lookForDaemon(): Promise<void> {
    const idle = () =>
      (this._state === 'stopped' || this._state === 'failed' || this._state === 'found') &&
      !this.disconnected &&
      !this.child;
    if (!idle()) return;
    if (!(await this.probe())) {
      // the daemon that refused our tokens went away
      if (this._state === 'found') this.setState('stopped');
      return;
    }
    if (!idle()) return;
    const tokens = await this.tokens();
    const key = `${tokens.join('\n')}\n${this.tokenFileTime()}`;
    if (key === this.refusedTokens) return;
    if (await this.connect()) return;
    this.refusedTokens = key;
    if (idle()) this.setState('found');
  }

  private tokenFileTime(): number {
    try {
      return statSync(path.join(dataFolder(), 'token')).mtimeMs;
    } catch {
      return 0;
    }
  }

  /** Tokens worth trying, in order: secret storage, then the data folder's token file. */
  private async tokens(): Promise<string[]> {
    const out: string[] = [];
    const stored = await this.secrets.get(TOKEN_KEY);
    if (stored) out.push(stored);
    const file = path.join(dataFolder(), 'token');
    try {
      const t = readFileSync(file, 'utf8').trim();
      if (t && !out.includes(t)) out.push(t);
    } catch {
      // no token file
    }
    return out;
  }

  /** Stores the token of a daemon started elsewhere (e.g. a remote one) and connects with it. */
  async setToken(token: string): Promise<DaemonClient | undefined> {
    this.disconnected = false;
    await this.secrets.store(TOKEN_KEY, token.trim());
    return this.connect();
  }

  /** Connects to a daemon already listening at harnessRl.daemonUrl. */
  async connect(): Promise<DaemonClient | undefined> {
    const url = daemonUrl();
    for (const token of await this.tokens()) {
      const c = new DaemonClient(url, token, 5_000);
      try {
        await c.health();
        // health may be open; check an authenticated route too
        await c.listRuns(undefined, 1);
        this._client = c;
        this.refusedTokens = undefined;
        this.disconnected = false;
        await this.secrets.store(TOKEN_KEY, token);
        this.setState('running');
        this.log.appendLine(`connected to daemon at ${url}`);
        return c;
      } catch (err) {
        this.log.appendLine(`no daemon at ${url} with a known token: ${errorText(err)}`);
      }
    }
    return undefined;
  }

  /** Starts the daemon as a child process (or connects when one already runs). */
  async start(): Promise<DaemonClient | undefined> {
    if (this._state === 'running' && this._client) return this._client;
    if (this._state === 'starting') return this.waitRunning();
    this.disconnected = false;
    this.lastError = undefined;
    this.setState('starting');
    const existing = await this.connect();
    if (existing) return existing;
    this.stopping = false;
    this.restarts = 0;
    return this.spawnChild();
  }

  private waitRunning(): Promise<DaemonClient | undefined> {
    return new Promise((resolve) => {
      const sub = this.onDidChangeState((s) => {
        if (s === 'starting') return;
        sub.dispose();
        resolve(this.client);
      });
    });
  }

  private async spawnChild(): Promise<DaemonClient | undefined> {
    this.setState('starting');
    const url = new URL(daemonUrl());
    const port = url.port || '4100';
    const cli = resolveCli();
    // the daemon creates (or reuses) <data>/token; we read it once it listens
    const args = [...cli.args, 'daemon', '--port', port, '--host', url.hostname, '--data', dataFolder()];
    this.log.appendLine(`starting: ${cli.command} ${args.join(' ')}`);
    const child = spawn(cli.command, args, {
      cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      env: { ...process.env, ELECTRON_RUN_AS_NODE: undefined },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let stderrTail = '';
    child.stdout?.on('data', (d) => this.log.append(String(d)));
    child.stderr?.on('data', (d) => {
      this.log.append(String(d));
      stderrTail = (stderrTail + String(d)).slice(-2_000);
    });
    let exited = false;
    // a command that cannot be spawned (ENOENT, EACCES) fails here at once, often with no 'exit'
    child.on('error', (err) => {
      exited = true;
      if (this.child === child) this.child = undefined;
      this.lastError = err.message;
      this.log.appendLine(`daemon failed to start: ${err.message}`);
    });
    child.on('exit', (code, signal) => {
      exited = true;
      this.lastError ??= lastLine(stderrTail) ?? `the daemon exited (code ${code}, signal ${signal})`;
      if (this.child === child) this.child = undefined;
      this.log.appendLine(`daemon exited (code ${code}, signal ${signal})`);
      if (this.stopping) {
        this.setState('stopped');
        return;
      }
      this._client = undefined;
      this.onCrash();
    });
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !exited) {
      try {
        await new DaemonClient(daemonUrl(), '', 2_000).health();
        const token = readFileSync(path.join(dataFolder(), 'token'), 'utf8').trim();
        await this.secrets.store(TOKEN_KEY, token);
        const client = new DaemonClient(daemonUrl(), token, 15_000);
        this._client = client;
        this.setState('running');
        this.log.appendLine(`daemon listening at ${daemonUrl()} (data ${dataFolder()})`);
        return client;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    if (!exited) {
      this.log.appendLine('daemon did not answer within 30 s; stopping it');
      this.lastError = `no answer at ${daemonUrl()} within 30 s`;
      this.stopping = true;
      child.kill('SIGTERM');
    }
    if (this._state === 'starting') this.setState('failed');
    return undefined;
  }

  private onCrash() {
    const max = vscode.workspace.getConfiguration('harnessRl').get<number>('maxRestarts', 3);
    if (this._state === 'running' && this.restarts < max) {
      this.restarts++;
      this.log.appendLine(`restarting daemon (${this.restarts}/${max})`);
      void this.spawnChild();
      return;
    }
    this.setState('failed');
    if (this.restarts >= max && max > 0) {
      void vscode.window
        .showErrorMessage(
          `Harness RL: the daemon crashed ${this.restarts + 1} times and was not restarted again.`,
          'Show Logs',
          'Start Daemon',
        )
        .then((pick) => {
          if (pick === 'Show Logs') this.log.show();
          if (pick === 'Start Daemon') void this.start();
        });
    }
  }

  /** Stops the daemon this window started; a daemon started elsewhere is only disconnected. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.disconnected = true;
    const child = this.child;
    this._client = undefined;
    if (!child) {
      this.setState('stopped');
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve();
      }, 5_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
    this.child = undefined;
    this.setState('stopped');
  }

  /** Forgets a connection that stopped answering (the daemon went away). */
  markLost(): void {
    if (this._state === 'running' && !this.child) {
      this._client = undefined;
      this.setState('stopped');
    }
  }

  dispose(): void {
    clearInterval(this.finder);
    this.stopping = true;
    this.child?.kill('SIGTERM');
    this.stateEmitter.dispose();
  }
}

/** The last non-empty line of a process's output, if any. */
function lastLine(text: string): string | undefined {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .at(-1);
}
