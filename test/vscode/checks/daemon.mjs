// A daemon that crashes comes back by itself.
import { readdirSync, readFileSync } from 'node:fs';
import { ctx, shot, step, waitFor } from '../lib/harness.mjs';

export async function daemonCrash() {
  await step('a daemon that crashes is restarted by the extension', daemonCrashRestarted);
}

async function daemonCrashRestarted() {
  const pidOf = () =>
    readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .find((d) => {
        try {
          const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
          return (
            argv.some((a) => a.endsWith('harness-rl.js')) &&
            argv.includes('daemon') &&
            argv.includes(String(ctx.daemonPort))
          );
        } catch {
          return false;
        }
      });
  const pid = pidOf();
  if (!pid) throw new Error('no daemon process started by the extension');
  process.kill(Number(pid), 'SIGKILL');
  await waitFor(
    'a new daemon process',
    () => {
      const next = pidOf();
      return next && next !== pid;
    },
    60_000,
  );
  await waitFor(
    'the restarted daemon to answer',
    async () => (await fetch(`http://127.0.0.1:${ctx.daemonPort}/api/health`)).ok,
    60_000,
  );
  await shot('14-daemon-restarted');
}
