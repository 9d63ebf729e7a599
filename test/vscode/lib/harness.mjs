// The suite's harness: its options, the log, steps (numbered, timed, a screenshot on failure), waiting,
// the figures it reports, the processes it started, and the state the steps share (ctx, the page).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../..', import.meta.url));
export const artifacts = join(root, 'test', 'artifacts');
mkdirSync(artifacts, { recursive: true });

const onlyArg = process.argv.indexOf('--only');
const only = onlyArg > 0 ? new RegExp(process.argv[onlyArg + 1]) : null;
export const options = {
  keep: process.argv.includes('--keep'),
  headed: process.argv.includes('--headed'),
  only,
  keepGoing: only !== null && process.argv.includes('--keep-going'),
};

const t0 = Date.now();
export const log = (msg) =>
  process.stdout.write(`[vscode ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
// what the run measured, written to test/artifacts/vscode-figures.json
export const figures = {};
// processes to stop at the end (each the leader of its process group)
export const children = [];
// what later steps need from earlier ones: paths, ports, the browser, the runs and recordings made
export const ctx = {};
// the workbench's page in Chromium, once set-up opened it (a live binding for every module)
export let page;
export function setPage(p) {
  page = p;
}

const state = { stepNo: 0, failed: false, inChecks: false };
// From here on --only applies: set-up steps always run.
export function startChecks() {
  state.inChecks = true;
}
export function markFailed() {
  state.failed = true;
}
export function outcome() {
  return { failed: state.failed, steps: state.stepNo };
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export async function waitFor(what, fn, timeoutMs = 30_000, everyMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (${last.message})` : ''}`);
}

export async function shot(name) {
  if (!page) return;
  const file = join(artifacts, `vscode-${name}.png`);
  await page.screenshot({ path: file }).catch(() => {});
  log(`screenshot ${file}`);
}

export async function step(name, fn) {
  if (state.inChecks && options.only && !options.only.test(name)) {
    log(`- skipped: ${name}`);
    return;
  }
  const n = ++state.stepNo;
  const started = Date.now();
  log(`▶ ${n}. ${name}`);
  try {
    await fn();
    log(`✔ ${n}. ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    state.failed = true;
    log(`✘ ${n}. ${name}: ${err?.stack ?? err}`);
    await shot(`failed-${n}`);
    if (!options.keepGoing) throw err;
  }
}

export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', ...opts });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

// The lines of a file the extension writes, once it exists.
export function fileLines(what, file, timeoutMs) {
  return waitFor(
    what,
    async () => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : null),
    timeoutMs,
  );
}

export function findFiles(dir, pred, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) findFiles(p, pred, out);
    else if (pred(p)) out.push(p);
  }
  return out;
}
