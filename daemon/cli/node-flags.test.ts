import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from './node-flags';

const root = new URL('../../', import.meta.url);

describe('DAEMON_NODE_FLAGS', () => {
  it('is what the bin shebang and the demo script start node with', () => {
    const shebang = readFileSync(new URL('bin/harness-rl.js', root), 'utf8').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${DAEMON_NODE_FLAGS.join(' ')}`);
    const demo = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).scripts.demo;
    expect(demo).toContain(`node ${DAEMON_NODE_FLAGS.join(' ')} bin/harness-rl.js demo`);
  });
});
