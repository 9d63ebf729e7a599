// A persistent harness for the tests of harness.mode: persistent on the Python workers (with and
// without Ray).

// Serves rollouts from stdin: one chat call each, then {"rollout_id", "reward"}. Its pid in pids/; a
// task with `crash` kills the process the first time it is seen, one with `hang` hangs it, one with
// `silent` answers {"rollout_id"} without a reward (a marker file per task).
export const PERSISTENT_CHAT_HARNESS = `
import { mkdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
if (process.env.HARNESS_RL_PERSISTENT !== '1') { console.error('not persistent'); process.exit(9); }
mkdirSync('pids', { recursive: true });
writeFileSync('pids/' + process.pid, '');
const first = (what, q) => { try { writeFileSync(what + '-' + q, '', { flag: 'wx' }); return true; } catch { return false; } };
for await (const line of createInterface({ input: process.stdin })) {
  const { rollout_id, task, env, model } = JSON.parse(line);
  if (task.crash && first('crashed', task.q)) { console.error('segfault, or so'); process.exit(139); }
  if (task.hang && first('hung', task.q)) { writeFileSync('hung-pid', String(process.pid)); await new Promise(() => setInterval(() => {}, 1000)); }
  const res = await fetch(env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + env.OPENAI_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 3, messages: [{ role: 'user', content: task.q }] }),
  });
  const text = (await res.json()).choices[0].message.content ?? '';
  console.log('a log line of ' + rollout_id);
  const silent = task.silent && first('silent', task.q);
  console.log(JSON.stringify(silent ? { rollout_id } : { rollout_id, reward: text.length % 2 }));
}
`;
