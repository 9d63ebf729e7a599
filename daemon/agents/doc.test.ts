import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { agentSections, BEGIN, DOC_ENDPOINTS, END, withSections } from './doc';
import { AGENT_SETTINGS, agentEnv, settingsMarkdown } from './settings';
import { DOC, expectedDoc, pinnedVersions } from './write-doc';

describe('docs/agents.md', () => {
  it('holds the settings of every agent as settings.ts gives them (else run `npm run docs:agents`)', () => {
    const doc = readFileSync(DOC, 'utf8');
    expect(doc === expectedDoc(), 'docs/agents.md is out of date: run `npm run docs:agents`').toBe(true);
  });

  it('names each agent with its wire API, each tested CLI with its pinned version, and every variable', () => {
    const sections = agentSections(pinnedVersions());
    for (const agent of AGENT_SETTINGS) {
      expect(sections).toContain(`## ${agent.name}`);
      expect(sections).toContain(agent.wire);
      for (const name of Object.keys(agentEnv(agent, DOC_ENDPOINTS)))
        expect(sections).toContain(`export ${name}=`);
    }
    expect(() => agentSections({})).toThrow('no pinned version of @anthropic-ai/claude-code');
  });

  it('replaces only what lies between the markers, and says when they are missing', () => {
    const doc = `intro\n${BEGIN}\nold\n${END}\noutro\n`;
    expect(withSections(doc, 'new\n')).toBe(`intro\n${BEGIN}\n\nnew\n\n${END}\noutro\n`);
    expect(() => withSections('no markers', 'x')).toThrow('markers');
  });
});

describe('the settings', () => {
  const e = {
    openaiBaseUrl: 'http://h:1/r/ro_1/v1',
    anthropicBaseUrl: 'http://h:1/r/ro_1',
    key: 'k_9',
    model: 'm',
  };
  it('point every agent at the URL of its wire API with the key', () => {
    for (const agent of AGENT_SETTINGS) {
      const md = settingsMarkdown(agent, e);
      const url =
        agent.wireApi === 'messages' || agent.wireApi === 'gemini' ? e.anthropicBaseUrl : e.openaiBaseUrl;
      expect(md, agent.id).toContain(url);
      if (agent.wireApi !== 'messages' && agent.wireApi !== 'gemini')
        expect(md, agent.id).not.toMatch(/r\/ro_1[^/]/);
      expect(md, agent.id).toContain('k_9');
    }
  });
  it('give Codex the Responses API and Claude Code a bearer token', () => {
    const codex = AGENT_SETTINGS.find((a) => a.id === 'codex')!;
    expect(codex.files(e)[0]!.text).toContain('wire_api = "responses"');
    const claude = AGENT_SETTINGS.find((a) => a.id === 'claude-code')!;
    expect(agentEnv(claude, e)).toMatchObject({
      ANTHROPIC_AUTH_TOKEN: 'k_9',
      ANTHROPIC_BASE_URL: e.anthropicBaseUrl,
    });
  });
});
