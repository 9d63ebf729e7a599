// The page a webview shows when it cannot load: why, Retry, and Start Daemon when the daemon is down.
import { h } from './dom';
import type { FromWebview } from './protocol';

export function errorPage(
  message: string,
  daemonStopped: boolean,
  post: (m: FromWebview) => void,
): HTMLElement[] {
  return [
    h('p', { class: 'error', role: 'alert' }, message),
    h(
      'p',
      {},
      daemonStopped
        ? h('button', { class: 'primary', onclick: () => post({ type: 'startDaemon' }) }, 'Start Daemon')
        : null,
      ' ',
      h('button', { onclick: () => post({ type: 'refresh' }) }, 'Retry'),
    ),
  ];
}
