import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Workspace } from './agent';
import { FIXES } from './known-fixes';
import { applyEdits, CodingTask, REPO, runTests } from './repo';
import { bwrapWorks, runSandboxed, throwAwayCopy } from './sandbox';

const tasks = readFileSync(new URL('./tasks.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => CodingTask.parse(JSON.parse(l)));

const dirs: string[] = [];
async function copy(): Promise<string> {
  const dir = await throwAwayCopy(REPO);
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('the reward: the share of the task’s tests that pass', () => {
  it.each(tasks.map((t) => [t.id, t] as const))(
    '%s fails as shipped and passes with its fix',
    async (_, task) => {
      const shipped = await runTests(await copy(), task.test);
      expect(shipped.failed).toBeGreaterThan(0);
      expect(shipped.reward).toBeLessThan(1);
      const fixed = await copy();
      await applyEdits(fixed, FIXES[task.id]!);
      expect(await runTests(fixed, task.test)).toMatchObject({
        passed: 3,
        failed: 0,
        reward: 1,
        timedOut: false,
      });
    },
  );

  it('is 0 for an edit that breaks the module, and for tests that run past the time limit', async () => {
    const broken = await copy();
    await applyEdits(broken, { 'src/clamp.mjs': 'export function clamp(x, lo, hi) {' });
    expect((await runTests(broken, 'test/clamp.test.mjs')).reward).toBe(0);
    const hanging = await copy();
    await applyEdits(hanging, { 'src/clamp.mjs': 'while (true) {}\nexport const clamp = () => 0;\n' });
    const started = Date.now();
    const run = await runTests(hanging, 'test/clamp.test.mjs', { timeoutMs: 1500 });
    expect(run).toMatchObject({ reward: 0, timedOut: true });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses edits outside the repository', async () => {
    const dir = await copy();
    await expect(applyEdits(dir, { '../escaped.txt': 'x' })).rejects.toThrow('outside the repository');
    await expect(applyEdits(dir, { '/tmp/escaped.txt': 'x' })).rejects.toThrow('outside the repository');
  });
});

describe('the sandbox', () => {
  const bwrap = bwrapWorks();
  const script = (server: number, outside: string) =>
    `const fs = require('node:fs');
const wrote = (p) => { try { fs.writeFileSync(p, 'x'); return true; } catch { return false; } };
fetch('http://127.0.0.1:${server}/').then(() => true, () => false).then((net) => console.log(JSON.stringify({
  inside: wrote('inside.txt'), outside: wrote(${JSON.stringify(outside)}), net,
  sees: fs.existsSync(${JSON.stringify(outside)}.replace(/[^/]+$/, '')),
})));`;

  async function probe(mode: 'auto' | 'off') {
    const server = createServer((_, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const outsideDir = await mkdtemp(join(tmpdir(), 'coding-agent-outside-'));
    dirs.push(outsideDir);
    try {
      const dir = await copy();
      const port = (server.address() as AddressInfo).port;
      await writeFile(join(dir, 'probe.cjs'), script(port, join(outsideDir, 'escaped.txt')));
      const ran = await runSandboxed([process.execPath, 'probe.cjs'], { dir, timeoutMs: 20_000, mode });
      expect(ran.code, ran.output).toBe(0);
      return { ran, seen: JSON.parse(ran.output.trim().split('\n').at(-1)!), dir, outsideDir };
    } finally {
      server.close();
    }
  }

  it.skipIf(!bwrap.ok)(
    'with bubblewrap: writes only in the copy, no network, other folders of /tmp not there',
    async () => {
      const { ran, seen, dir } = await probe('auto');
      expect(ran.sandboxed).toBe(true);
      expect(seen).toEqual({ inside: true, outside: false, net: false, sees: false });
      expect(await readFile(join(dir, 'inside.txt'), 'utf8')).toBe('x');
    },
  );

  it('without it (missing, or off): the command runs in the copy, unconfined, still under the time limit', async () => {
    if (!bwrap.ok)
      process.stderr.write(`bwrap does not work here (${bwrap.why}): testing the fallback only\n`);
    const { ran, seen, outsideDir } = await probe('off');
    expect(ran.sandboxed).toBe(false);
    expect(seen).toEqual({ inside: true, outside: true, net: true, sees: true });
    expect(await readFile(join(outsideDir, 'escaped.txt'), 'utf8')).toBe('x');
    const dir = await copy();
    const slow = await runSandboxed([process.execPath, '-e', 'setTimeout(() => {}, 60_000)'], {
      dir,
      timeoutMs: 1000,
      mode: 'off',
    });
    expect(slow.timedOut).toBe(true);
  });
});

describe('the agent’s tools', () => {
  it('list, read and write files of its copy, run the tests, and answer a bad call with what was wrong', async () => {
    const task = tasks.find((t) => t.id === 'clamp')!;
    const ws = await Workspace.open(task);
    try {
      expect((await ws.call('list_files', '{}')).result.split('\n')).toContain('src/clamp.mjs');
      expect((await ws.call('read_file', '{"path":"src/clamp.mjs"}')).result).toContain('Math.min(x, lo)');
      expect((await ws.call('run_tests', '')).result).toMatch(/^1 passed, 2 failed/);
      const fix = FIXES.clamp!['src/clamp.mjs']!;
      expect(await ws.call('write_file', JSON.stringify({ path: 'src/clamp.mjs', content: fix }))).toEqual({
        ok: true,
        result: 'wrote src/clamp.mjs',
      });
      expect((await ws.call('run_tests', '{}')).result).toMatch(/^3 passed, 0 failed/);
      expect(await ws.edits()).toEqual({ 'src/clamp.mjs': fix });
      expect(await ws.call('read_file', '{"path":"../../etc/passwd"}')).toMatchObject({ ok: false });
      expect(await ws.call('read_file', '{"file":"x"}')).toMatchObject({ ok: false });
      expect(await ws.call('rm_rf', '{}')).toEqual({ ok: false, result: 'no tool named rm_rf' });
      // the shipped repository is untouched
      expect(readFileSync(join(REPO, 'src/clamp.mjs'), 'utf8')).toContain('Math.min(x, lo)');
    } finally {
      await ws.close();
    }
  });
});
