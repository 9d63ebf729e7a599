// The manifest matches the code: every contributed command is registered and vice versa, every
// setting is read somewhere, menus and views name things that exist.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const srcDir = join(root, 'extension', 'src');
const sources = readdirSync(srcDir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  .map((f) => readFileSync(join(srcDir, f), 'utf8'))
  .join('\n');
const table = readFileSync(join(srcDir, 'commands.ts'), 'utf8');
const registered = [...table.matchAll(/^ {2}'(harnessRl\.[A-Za-z]+)': \{/gm)].map((m) => m[1]);

describe('package.json manifest', () => {
  it('every contributed command is registered and every registered command is contributed', () => {
    const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command);
    expect(registered.length).toBeGreaterThan(10);
    expect([...registered].sort()).toEqual([...contributed].sort());
    for (const c of pkg.contributes.commands) expect(c.category).toBe('Harness RL');
  });

  it('every setting is read somewhere', () => {
    for (const key of Object.keys(pkg.contributes.configuration.properties)) {
      const name = key.replace(/^harnessRl\./, '');
      expect(sources.includes(`'${name}'`), `${key} is never read`).toBe(true);
    }
  });

  it('menus and welcome views only name contributed commands and views', () => {
    const commands = new Set(pkg.contributes.commands.map((c: { command: string }) => c.command));
    const views = new Set(pkg.contributes.views.harnessRl.map((v: { id: string }) => v.id));
    for (const items of Object.values(pkg.contributes.menus) as { command: string; when?: string }[][]) {
      for (const m of items) expect(commands.has(m.command), m.command).toBe(true);
    }
    for (const w of pkg.contributes.viewsWelcome) {
      expect(views.has(w.view)).toBe(true);
      for (const m of w.contents.matchAll(/command:([\w.]+)/g)) expect(commands.has(m[1]), m[1]).toBe(true);
    }
    for (const v of views) expect(sources.includes(`'${v}'`), `${v} has no provider`).toBe(true);
  });

  it('activation is lazy and the entry point is the CommonJS bundle', () => {
    expect(pkg.activationEvents).not.toContain('*');
    expect(pkg.activationEvents).not.toContain('onStartupFinished');
    expect(pkg.main).toBe('./dist/extension.cjs');
    for (const id of ['harnessRl.trajectory', 'harnessRl.dashboard']) {
      expect(pkg.activationEvents).toContain(`onWebviewPanel:${id}`);
    }
  });
});
