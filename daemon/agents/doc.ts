// The per-agent sections of docs/agents.md, generated from the settings (settings.ts) with placeholder
// URLs, key and model; `npm run docs:agents` writes them between the markers, doc.test.ts fails when
// the file is out of date.
import { AGENT_SETTINGS, type AgentEndpoints, type AgentSettings, settingsMarkdown } from './settings';

export const BEGIN =
  '<!-- BEGIN agent settings: generated from daemon/agents/settings.ts by `npm run docs:agents` -->';
export const END = '<!-- END agent settings -->';

const ROLLOUT = 'http://127.0.0.1:4100/r/<rollout>';
export const DOC_ENDPOINTS: AgentEndpoints = {
  openaiBaseUrl: `${ROLLOUT}/v1`,
  anthropicBaseUrl: ROLLOUT,
  key: '<key>',
  model: '<served model>',
};

/** Beside a rollout URL, the recording's. */
function recordingUrl(line: string): string | undefined {
  if (line.includes(`${ROLLOUT}/v1`)) return 'recording: http://127.0.0.1:4100/v1';
  if (line.includes(ROLLOUT)) return 'recording: http://127.0.0.1:4100';
  return undefined;
}

function section(agent: AgentSettings, versions: Record<string, string>): string {
  let heading = agent.name;
  if (agent.package) {
    const version = versions[agent.package];
    if (!version) throw new Error(`no pinned version of ${agent.package} (test/agents-cli/package.json)`);
    heading += ` (\`${agent.package}\` ${version})`;
  }
  const notes = agent.notes.map((n) => `- ${n}`).join('\n');
  const ci = agent.tested
    ? ''
    : '\n\nNot run in CI: these settings follow its documentation and the wire API it speaks.';
  return `## ${heading} — ${agent.wire}\n\n${settingsMarkdown(agent, DOC_ENDPOINTS, { annotate: recordingUrl })}\n\n${notes}${ci}\n`;
}

/** The generated part: one section per agent. `versions`: npm package → the version pinned for CI. */
export function agentSections(versions: Record<string, string>): string {
  return AGENT_SETTINGS.map((a) => section(a, versions)).join('\n');
}

/** `doc` with the text between the markers replaced by `generated`. */
export function withSections(doc: string, generated: string): string {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/agents.md has no ${BEGIN} … ${END} markers`);
  return `${doc.slice(0, begin + BEGIN.length)}\n\n${generated}\n${doc.slice(end)}`;
}
