import { describe, expect, it } from 'vitest';
import { checkRunConfig, isRunConfigText } from './configDiagnostics';

const good = `run:
  name: demo
  tasks:
    file: tasks.jsonl
`;

describe('run config diagnostics', () => {
  it('a valid config (with a run: section or bare) parses to the RunConfig with defaults', () => {
    const a = checkRunConfig(good);
    expect(a.problems).toEqual([]);
    expect(a.config?.algorithm.n).toBe(8);
    const b = checkRunConfig('name: bare\ntasks: { file: t.jsonl }\n');
    expect(b.config?.name).toBe('bare');
  });

  it('puts a wrong value on the line and column of that value', () => {
    const text = `run:
  name: demo
  tasks:
    file: tasks.jsonl
  algorithm:
    n: zero
`;
    const { problems } = checkRunConfig(text);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ path: 'algorithm.n', line: 5, col: 7 });
    expect(problems[0].message).toContain('run.algorithm.n');
  });

  it('puts an unknown key on the key itself', () => {
    const text = `run:
  name: demo
  tasks:
    file: tasks.jsonl
  shedule:
    steps: 3
`;
    const { problems } = checkRunConfig(text);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ line: 4, col: 2 });
    expect(problems[0].message).toContain('shedule');
  });

  it('a missing required section points at its parent', () => {
    const { problems } = checkRunConfig('run:\n  name: demo\n');
    expect(problems[0].path).toBe('tasks');
    expect(problems[0].line).toBe(0);
  });

  it('JSON files map too, and YAML syntax errors are reported with their position', () => {
    const json = '{\n  "name": "j",\n  "tasks": {"file": "t.jsonl"},\n  "schedule": {"steps": -1}\n}';
    const { problems } = checkRunConfig(json);
    expect(problems[0]).toMatchObject({ path: 'schedule.steps', line: 3 });
    const bad = checkRunConfig('run:\n  name: [unclosed\n');
    expect(bad.config).toBeUndefined();
    expect(bad.problems[0].message).toMatch(/^syntax/);
  });

  it('marks a tasks file that is not there on its line, and gives no config to start', () => {
    const text = 'run:\n  name: demo\n  tasks:\n    file: missing.jsonl\n';
    const check = checkRunConfig(text, (f) => f !== 'missing.jsonl');
    expect(check.config).toBeUndefined();
    expect(check.problems).toHaveLength(1);
    expect(check.problems[0]).toMatchObject({ path: 'tasks.file', line: 3, col: 10 });
    expect(check.problems[0].message).toBe('run.tasks.file: no file missing.jsonl next to this config');
    expect(checkRunConfig(good, () => true).config?.name).toBe('demo');
  });

  it('tells run configs from other YAML and JSON: the JSON Schema with nested name and tasks is not one', () => {
    expect(isRunConfigText(good)).toBe(true);
    expect(isRunConfigText('{"name": "x", "tasks": {"file": "t.jsonl"}}')).toBe(true);
    const schema = JSON.stringify(
      { $schema: 'x', properties: { run: { properties: { name: {}, tasks: {} } } } },
      null,
      2,
    );
    expect(isRunConfigText(schema)).toBe(false);
    expect(isRunConfigText('jobs:\n  tasks:\n    name: build\n')).toBe(false);
    expect(isRunConfigText('run: [unclosed')).toBe(false);
  });
});
