// Config files: errors carry the field path and, for YAML, the line and column; the committed JSON
// Schema for editors is the one the schemas generate.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { daemonOptions } from '../../daemon/cli/commands/daemon';
import { configJsonSchema } from '../../daemon/cli/commands/schema';
import { validateConfigText } from '../../daemon/config/load';
import { startTestDaemon } from '../helpers/daemon';

const YAML_TEXT = `daemon:
  port: 4100
run:
  name: broken
  tasks:
    file: tasks.jsonl
    validation_fraction: 0.9
  algorithm:
    n: 8
    advantage: gpro
    colour: blue
  inference:
    endpoints:
      - reference
      - not a url
`;

describe('config files', () => {
  it('a valid YAML file gives the config with defaults filled in', () => {
    const result = validateConfigText('run:\n  name: ok\n  tasks:\n    file: t.jsonl\n', 'harness.yaml');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.run).toMatchObject({
      name: 'ok',
      algorithm: { n: 8, advantage: 'grpo' },
      schedule: { mode: 'sync' },
    });
  });

  it('each YAML error names its field path, line and column', () => {
    const result = validateConfigText(YAML_TEXT, 'harness.yaml');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const byPath = Object.fromEntries(result.errors.map((e) => [e.path, e]));
    expect(byPath['run.tasks.validation_fraction']).toMatchObject({ line: 7, column: 26 });
    expect(byPath['run.algorithm.advantage']).toMatchObject({ line: 10, column: 16 });
    expect(byPath['run.algorithm.colour']).toMatchObject({
      line: 11,
      column: 5,
      message: 'unknown field "colour"',
    });
    expect(byPath['run.inference.endpoints[1]']).toMatchObject({ line: 15, column: 9 });
    expect(result.errors).toHaveLength(4);
  });

  it('a missing field points at the section that lacks it', () => {
    const result = validateConfigText('run:\n  name: x\n  algorithm:\n    n: 2\n', 'harness.yml');
    expect(result).toEqual({
      ok: false,
      errors: [
        { path: 'run.tasks', message: expect.stringContaining('expected object'), line: 1, column: 1 },
      ],
    });
  });

  it('a file that is just a run is read as the run section; its paths start at the run fields', () => {
    const ok = validateConfigText('name: bare\ntasks:\n  file: t.jsonl\n', 'harness.yaml');
    expect(ok.ok && ok.config.run?.name).toBe('bare');
    const bad = validateConfigText(
      'name: bare\ntasks:\n  file: t.jsonl\nschedule:\n  steps: 0\n',
      'harness.yaml',
    );
    expect(bad.ok ? [] : bad.errors).toMatchObject([{ path: 'schedule.steps', line: 5, column: 10 }]);
  });

  it('YAML syntax errors and duplicate keys are reported with their line', () => {
    const dup = validateConfigText('run:\n  name: a\n  name: b\n', 'harness.yaml');
    expect(dup.ok ? [] : dup.errors).toMatchObject([{ path: '', line: 3 }]);
    const syntax = validateConfigText('run:\n  name: [unclosed\n', 'harness.yaml');
    expect(syntax.ok).toBe(false);
    expect(syntax.ok ? null : syntax.errors[0]!.line).toBeGreaterThanOrEqual(2);
  });

  it('JSON files are validated the same way, with positions for schema errors', () => {
    const text = '{\n  "run": {\n    "name": 5,\n    "tasks": {"file": "t.jsonl"}\n  }\n}\n';
    const result = validateConfigText(text, 'harness.json');
    expect(result.ok ? [] : result.errors).toMatchObject([{ path: 'run.name', line: 3, column: 13 }]);
    const broken = validateConfigText('{"run": {"name": "x",}', 'harness.json');
    expect(broken.ok ? '' : broken.errors[0]!.message).toMatch(/^invalid JSON/);
  });
});

describe('harness-rl daemon options', () => {
  it("take the config file's daemon section, with its data folder relative to the file, and flags win", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'harness-rl-options-'));
    try {
      const file = join(dir, 'harness.yaml');
      writeFileSync(
        file,
        'daemon:\n  port: 4200\n  data: state\n  backends: [http://127.0.0.1:9/v1]\n  body_limit_bytes: 1024\n  side_models: tiny\n',
      );
      const fromFile = await daemonOptions(['--config', file]);
      expect(fromFile).toMatchObject({
        dataDir: join(dir, 'state'),
        config: {
          port: 4200,
          store: 'sqlite',
          backends: ['http://127.0.0.1:9/v1'],
          body_limit_bytes: 1024,
        },
      });
      expect(fromFile?.port).toBeUndefined();
      expect(
        await daemonOptions(['--config', file, '--port', '0', '--data', dir, '--backend', 'http://b:1/v1']),
      ).toMatchObject({ port: 0, dataDir: dir, backends: ['http://127.0.0.1:9/v1', 'http://b:1/v1'] });
      await expect(daemonOptions(['--port', 'x'])).rejects.toThrow('--port must be');
      writeFileSync(file, 'daemon:\n  port: -1\n');
      await expect(daemonOptions(['--config', file])).rejects.toThrow(`${file}:2:9: daemon.port`);
      expect(await daemonOptions(['--help'])).toBeNull();

      // The daemon runs with the section's settings (side_models and all), the flags over them.
      const daemon = await startTestDaemon({ ...fromFile, dataDir: join(dir, 'state'), port: 0 });
      try {
        expect(daemon.ctx.config).toMatchObject({
          body_limit_bytes: 1024,
          backends: ['http://127.0.0.1:9/v1'],
        });
        expect(daemon.ctx.config.side_models).toBe('tiny');
        expect((await daemon.api('POST', '/api/rollouts', { input: 'x'.repeat(2000) })).status).toBe(413);
      } finally {
        await daemon.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('JSON Schema for editors', () => {
  it('the committed harness-rl.schema.json is the generated one (run `npm run schema` after changing config.ts)', () => {
    const committed = JSON.parse(
      readFileSync(fileURLToPath(new URL('../../harness-rl.schema.json', import.meta.url)), 'utf8'),
    );
    expect(committed).toEqual(configJsonSchema());
  });
});
