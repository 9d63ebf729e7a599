import { describe, expect, it } from 'vitest';
import { configSections } from './configView';

describe('run config as a readable form', () => {
  it('groups settings by section with their paths, lists read as lists, tokens are hidden', () => {
    const sections = configSections({
      name: 'math-agent',
      schedule: { steps: 10, group_size: 4 },
      inference: { endpoints: ['ws://a:1', 'ws://b:2'], token: 'sk-123' },
      trainer: { optimizer: { lr: 1e-6 }, endpoint: null },
      tasks: [{ prompt: 'p1' }, { prompt: 'p2' }],
    });
    expect(sections.map((s) => s.title)).toEqual(['Run', 'Schedule', 'Inference', 'Trainer', 'Tasks']);
    expect(sections[0].rows).toEqual([['name', 'math-agent']]);
    expect(sections[1].rows).toEqual([
      ['steps', '10'],
      ['group_size', '4'],
    ]);
    expect(sections[2].rows).toEqual([
      ['endpoints', 'ws://a:1, ws://b:2'],
      ['token', '•••••• (hidden)'],
    ]);
    expect(sections[3].rows).toEqual([
      ['optimizer.lr', '0.000001'],
      ['endpoint', '—'],
    ]);
    expect(sections[4].rows).toEqual([
      ['[0].prompt', 'p1'],
      ['[1].prompt', 'p2'],
    ]);
    expect(JSON.stringify(sections)).not.toContain('sk-123');
  });

  it('shows a config that is not an object as one value', () => {
    expect(configSections(null)).toEqual([{ title: 'Run', rows: [['config', '—']] }]);
  });
});
