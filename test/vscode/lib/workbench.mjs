// Workbench helpers: the command palette, quick picks, save dialogs, notifications, the active webview.
import { page, waitFor } from './harness.mjs';

export async function palette(command, { accept = true } = {}) {
  // the palette computes its list when it opens: until the extension host has registered the
  // contributions it shows none of them, so reopen until the command is there
  const deadline = Date.now() + 60_000;
  for (;;) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    const shown = await input
      .waitFor({ state: 'visible', timeout: 5_000 })
      .then(() => true)
      .catch(() => false);
    if (!shown) {
      // the focus is inside a webview, which keeps F1: the title bar's command center opens it too
      await page.locator('.command-center-center').first().click();
      await input.waitFor({ state: 'visible' });
      await page.keyboard.type('>');
    }
    // the palette fills its list asynchronously; typing before that loses keystrokes. A webview that
    // takes the focus back as the palette opens leaves the list hidden: open the palette again.
    const listed = await page
      .locator('.quick-input-list .monaco-list-row')
      .first()
      .waitFor({ state: 'visible', timeout: 10_000 })
      .then(() => true)
      .catch(() => false);
    if (!listed) {
      if (Date.now() > deadline) throw new Error(`the command palette showed no list for "${command}"`);
      continue;
    }
    await page.waitForTimeout(200);
    await page.keyboard.type(command, { delay: 10 });
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: command.trim() }).first();
    try {
      await row.waitFor({ state: 'visible', timeout: 5_000 });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      continue;
    }
    if (accept) await row.click();
    return;
  }
}

export async function quickPick(text) {
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first();
  try {
    await row.waitFor({ state: 'visible', timeout: 5_000 });
  } catch {
    // A long list (the runs after the evaluation steps) renders only its first rows: filter by the text.
    await input.fill(text);
    await row.waitFor({ state: 'visible', timeout: 10_000 });
  }
  await row.click();
}

// The labels of the rows that command's picker (titled `title`) shows for `filter`; the picker is
// closed again without picking.
export async function pickerLabels(command, title, filter) {
  await palette(command);
  const titled = page.locator('.quick-input-widget .quick-input-title');
  await waitFor(`the picker "${title}"`, async () => (await titled.textContent())?.trim() === title);
  await page.locator('.quick-input-widget input').fill(filter);
  // a row's label (its first line; the detail is the second)
  const rows = page.locator(
    '.quick-input-list .monaco-list-row .quick-input-list-rows > .quick-input-list-row:first-child .label-name',
  );
  // the list filters as it renders: wait until every row shown holds the filter
  const labels = await waitFor(`the picker's rows for "${filter}"`, async () => {
    const shown = (await rows.allTextContents()).map((t) => t.trim());
    return shown.length > 0 && shown.every((t) => t.includes(filter)) ? shown : null;
  });
  await page.keyboard.press('Escape');
  return labels;
}

// Answers a save dialog (code-server's simple file dialog: a quick input holding a path). It waits
// for the dialog itself: the quick pick that led to it may still be on screen for a moment.
// The hover of `target` that holds `text`: it shows after a delay and closes when the target is redrawn
// (a newer report, a tick), so move away and hover again until it is there.
export async function hoverOf(target, text, what) {
  const hover = page.locator('.monaco-hover, .workbench-hover', { hasText: text }).first();
  await waitFor(
    what,
    async () => {
      await page.mouse.move(0, 0);
      await target.hover();
      await hover.waitFor({ timeout: 3_000 });
      return true;
    },
    30_000,
  );
  return hover;
}

export async function saveAs(path) {
  const input = page.locator('.quick-input-widget input');
  await waitFor(
    'the save dialog',
    async () => (await input.isVisible()) && (await input.inputValue()).startsWith('/'),
    20_000,
  );
  // The dialog goes on filling its own value after it shows (it resolved a typed path against its
  // folder once: `…/workspace//tmp/…`): type the path until it stays as typed.
  await waitFor(
    'the path typed into the save dialog to stay',
    async () => {
      if ((await input.inputValue()) !== path) await input.fill(path);
      await page.waitForTimeout(300);
      return (await input.inputValue()) === path;
    },
    15_000,
  );
  await page.keyboard.press('Enter');
}

export function toast(text) {
  return page.locator('.notifications-toasts .notification-toast', { hasText: text });
}

// The webview content of the active editor (two iframes deep).
export function webview() {
  return page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
}
