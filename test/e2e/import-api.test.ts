// `harness-rl import` through a running daemon (REST /api/imports) on the session files the CLIs
// write: Codex's zstd-compressed rollouts (.jsonl.zst) are listed by the scan and imported like the
// plain ones; a path that is not a session file under the root is refused, naming `path`.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { importCommand } from '../../daemon/cli/commands/import';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

const FIXTURES = resolve(__dirname, '../fixtures/imports');
const ID = '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

let daemon: TestDaemon;
let home: string;
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'hrl-import-api-'));
  const day = join(home, '.codex/sessions/2026/11/30');
  mkdirSync(day, { recursive: true });
  copyFileSync(
    join(FIXTURES, 'codex-rollout.jsonl.zst'),
    join(day, `rollout-2026-11-30T10-00-00-${ID}.jsonl.zst`),
  );
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
  rmSync(home, { recursive: true, force: true });
});

it('imports a Codex rollout compressed with zstd (.jsonl.zst) through the daemon', async () => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await importCommand(
    ['codex', '--url', daemon.url, '--token', daemon.token, '--json'],
    { out: (t) => out.push(t), err: (t) => err.push(t) },
    { HOME: home },
  );
  expect(code, err.join('\n')).toBe(0);
  expect(JSON.parse(out.join('\n'))).toMatchObject({ sessions: 1, imported: 1, calls: 3, failed: 0 });
});

it('refuses a path that is not a session file under the root, naming path', async () => {
  const root = join(home, '.codex/sessions');
  for (const path of ['../elsewhere.jsonl', '2026/11/30/notes.txt', '2026/11/30/a.zst']) {
    const r = await daemon.api('POST', '/api/imports', { source: 'codex', root, path });
    expect(r.status, path).toBe(400);
    expect(r.body.error).toMatchObject({ field: 'path' });
  }
});
