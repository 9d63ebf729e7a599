// The verifier of the evolve example (outside the harness folder, so no candidate can change it): reads
// {task, stdout} on stdin, takes the harness's last stdout line {"answer": "..."}, and prints the reward:
// 1 for the right number, 0.3 for a lone wrong digit (the right form), 0 otherwise.
let input = '';
for await (const chunk of process.stdin) input += chunk;
const { task, stdout } = JSON.parse(input);
const last =
  String(stdout ?? '')
    .trim()
    .split('\n')
    .at(-1) ?? '';
let answer = '';
try {
  answer = String(JSON.parse(last).answer ?? '');
} catch {}
const reward = answer === String(task.answer) ? 1 : /^\d$/.test(answer) ? 0.3 : 0;
console.log(JSON.stringify({ reward, detail: { answer } }));
