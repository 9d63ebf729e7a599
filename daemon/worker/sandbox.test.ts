// The bubblewrap sandboxes see folders under /tmp they run in, read-only, over their private /tmp.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bwrapArgs, bwrapWorks } from '../../examples/coding-agent/sandbox';
import { bubblewrapArgv } from './sandbox';

// Under /tmp itself, where a CI checkout or a test's run folder may be (os.tmpdir() may point elsewhere).
const dir = mkdtempSync('/tmp/hrl-sandbox-');
writeFileSync(join(dir, 'task.txt'), 'the task\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const run = (argv: string[]) => spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', cwd: dir });

describe.skipIf(!bwrapWorks().ok)('bubblewrap over a folder under /tmp', () => {
  it('harness.sandbox bubblewrap: a harness running in /tmp/… reads its folder, cannot write it, and has a /tmp of its own', () => {
    const r = run(
      bubblewrapArgv(
        ['sh', '-c', `cat ${dir}/task.txt && ! touch ${dir}/x 2>/dev/null && touch /tmp/mine && echo ok`],
        dir,
      ),
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('the task\nok\n');
  });

  it('the coding agent and task synthesis: a read-only folder under /tmp (a checkout, its venv) is seen', () => {
    const work = mkdtempSync('/tmp/hrl-sandbox-work-');
    try {
      const r = run(['bwrap', ...bwrapArgs(work, ['cat', join(dir, 'task.txt')], [dir])]);
      expect(r.stdout, r.stderr).toBe('the task\n');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
