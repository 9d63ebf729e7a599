// scripts/setup-vllm-venv.sh, as far as it runs here without downloading vLLM: the venv it makes is the
// one the node agent's --model command uses, it pins vLLM 0.34.0, refuses a Python vLLM does not take,
// and skips an install that is already there (its --dry-run prints the commands instead of running them).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildVllmCommand, vllmVenv } from './vllm-command';

const SCRIPT = resolve(__dirname, '../../scripts/setup-vllm-venv.sh');
const dir = mkdtempSync(join(tmpdir(), 'harness-rl-vllm-venv-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function setup(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync('bash', [SCRIPT, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('scripts/setup-vllm-venv.sh', () => {
  it('is valid bash', () => {
    execFileSync('bash', ['-n', SCRIPT]);
  });

  it('makes the venv the node agent starts vLLM from, with vLLM pinned (dry run)', () => {
    const home = join(dir, 'home');
    const r = setup(['--dry-run'], { HOME: home, HARNESS_RL_VLLM_VENV: '' });
    const venv = join(home, '.harness-rl-node', 'vllm-venv');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`would run: python3 -m venv ${venv}`);
    expect(r.out).toContain(
      `would run: ${venv}/bin/python -m pip install --disable-pip-version-check vllm==0.34.0`,
    );
    expect(vllmVenv({})).toBe(join(homedir(), '.harness-rl-node', 'vllm-venv'));
    expect(
      buildVllmCommand({ model: 'Qwen/Qwen3-1.7B', port: 8000, env: { HARNESS_RL_VLLM_VENV: venv } }),
    ).toMatch(new RegExp(`^${venv}/bin/vllm serve `));
  });

  it('refuses a Python that vLLM 0.34 does not take, naming it', () => {
    const fake = join(dir, 'python3.10');
    writeFileSync(fake, '#!/bin/sh\necho 3.10\n');
    chmodSync(fake, 0o755);
    const r = setup(['--dry-run', join(dir, 'v1')], { PYTHON: fake });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/needs Python 3\.11 to 3\.14; '.*python3\.10' is 3\.10/);
  });

  it('skips the install when the pinned vLLM is already in the venv', () => {
    const venv = join(dir, 'installed');
    mkdirSync(join(venv, 'bin'), { recursive: true });
    writeFileSync(join(venv, 'bin', 'vllm'), '#!/bin/sh\n');
    chmodSync(join(venv, 'bin', 'vllm'), 0o755);
    writeFileSync(join(venv, '.harness-rl-vllm'), 'vllm==0.34.0\n');
    const r = setup([venv]);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(`vLLM 0.34.0 is installed in ${venv}`);
    writeFileSync(join(venv, '.harness-rl-vllm'), 'vllm==0.33.0\n');
    expect(setup(['--dry-run', venv]).out).toContain('vllm==0.34.0');
  });
});
