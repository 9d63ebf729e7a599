// The run dashboard after a window reload and across a theme switch (screenshots in both themes).
import { page, shot, step, waitFor } from '../lib/harness.mjs';
import { rolloutRow } from '../lib/sidebar.mjs';
import { palette, quickPick, webview } from '../lib/workbench.mjs';

export async function dashboardRestoredAndThemed() {
  await step(
    'an open dashboard comes back after a window reload (webview panel serializer)',
    dashboardAfterReload,
  );
  await step(
    'the dashboard follows a theme switch while open; the dashboard, the sidebar and the trajectory in both themes',
    dashboardFollowsTheme,
  );
}

async function dashboardAfterReload() {
  await palette('View: Close All Editors');
  await palette('Harness RL: Open Run Dashboard');
  await quickPick('vscode-math');
  await webview().locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
  await page.waitForTimeout(1000);
  await palette('Developer: Reload Window');
  await page.waitForTimeout(3000);
  await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
  // the restored panel asks the (new) extension host for its run; the daemon this window started
  // stopped with the old one, so the panel says so until the daemon runs again
  const frame = webview();
  await frame.locator('h1, .error').first().waitFor({ timeout: 60_000 });
  if (await frame.locator('.error').count()) {
    await shot('13-dashboard-restored-daemon-down');
    // the page says what is wrong and offers what fixes it: Start Daemon, then the run by itself
    const text = await frame.locator('#root').innerText();
    if (/press Refresh/.test(text)) throw new Error(`the error page names a button it lacks: ${text}`);
    await frame.getByRole('button', { name: 'Start Daemon' }).click({ timeout: 10_000 });
  }
  await frame.locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
  await frame.locator('.chart').first().waitFor({ timeout: 30_000 });
  await shot('13-dashboard-restored');
}

async function dashboardFollowsTheme() {
  // Picks a colour theme as a person does (the picker writes workbench.colorTheme).
  const theme = async (label) => {
    await palette('Preferences: Color Theme');
    const input = page.locator('.quick-input-widget input');
    await input.fill(label);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor();
    await page.keyboard.press('Enter');
  };
  const axisStroke = () => webview().locator('#charts').getAttribute('data-axis-stroke');
  try {
    const themes = [
      ['Dark Modern', 'vs-dark', 'dark'],
      ['Light Modern', 'vs', 'light'],
    ];
    // switch away from the theme the window has now first
    if ((await page.locator('.monaco-workbench.vs-dark').count()) > 0) themes.reverse();
    for (const [name, css, slug] of themes) {
      await webview().locator('.chart canvas').first().waitFor({ timeout: 30_000 });
      const before = await axisStroke();
      await theme(name);
      await waitFor(
        `the ${slug} theme`,
        async () => (await page.locator(`.monaco-workbench.${css}`).count()) > 0,
      );
      // the open dashboard redraws its charts in the new colours, without a reload
      await waitFor(
        `the charts in the ${slug} theme's colours`,
        async () => (await axisStroke()) !== before,
        15_000,
      ).catch(async (e) => {
        throw new Error(`${e.message}: axis colour stays ${before}`);
      });
      await page.waitForTimeout(500);
      await shot(`14-${slug}-dashboard`);
      const row = await rolloutRow();
      await shot(`14-${slug}-tree`);
      await row.click();
      const frame = webview();
      await frame.locator('section.call').first().waitFor({ timeout: 30_000 });
      await shot(`14-${slug}-trajectory-conversation`);
      await frame.locator('button[data-tab="training"]').click();
      await frame.locator('.tokens .tok.m1').first().waitFor({ timeout: 20_000 });
      await page.waitForTimeout(500);
      await shot(`14-${slug}-trajectory-tokens`);
      await palette('View: Close All Editors');
      await palette('Harness RL: Open Run Dashboard');
      await quickPick('vscode-math');
      await webview().locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
    }
  } finally {
    await page.keyboard.press('Escape');
  }
}
