// Why a server is down, on the dashboard in a real browser: a crash-looping server's last error
// and stderr are where a person reads them, at every window width from 1280 to 2200 px, not in
// a cell cut off at the right edge or scrolled out of the table's box.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openBrowser, shoot } from './browser.mjs';
import { fakeServer, freePort, mcpmux, startDaemon, waitFor } from './harness.mjs';

const WHY = 'Error: GITHUB_TOKEN is not set';

// In the page: every rendered piece of `text` under #servers — each line box of it inside the
// window, and the element at its middle inside the text's own cell. What is wrong, else "".
function readable(text) {
  const walk = document.createTreeWalker(document.querySelector('#servers'), NodeFilter.SHOW_TEXT);
  const problems = [];
  let shown = 0;
  for (let node; (node = walk.nextNode());) {
    if (!node.data.includes(text)) continue;
    const range = document.createRange();
    const from = node.data.indexOf(text);
    range.setStart(node, from);
    range.setEnd(node, from + text.length);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    if (!rects.length) continue; // in a collapsed <details>: not what the person sees
    shown++;
    const cell = node.parentElement.closest('td, th');
    for (const r of rects) {
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      if (r.left < 0 || r.right > window.innerWidth || r.top < 0 || r.bottom > window.innerHeight)
        problems.push(`"${text}" at ${Math.round(r.left)}–${Math.round(r.right)} px is outside the ${window.innerWidth} px window`);
      else if (document.elementFromPoint(x, y)?.closest('td, th') !== cell)
        problems.push(`at "${text}" (${Math.round(x)}, ${Math.round(y)}) the page shows ${document.elementFromPoint(x, y)?.outerHTML.slice(0, 80)}`);
    }
  }
  return shown ? problems.join('; ') : `"${text}" is nowhere on the page`;
}

describe('the dashboard says why a server is down', () => {
  let d, browser, page;

  before(async () => {
    const port = await freePort();
    d = await startDaemon({
      daemon: { http: `127.0.0.1:${port}`, reconnect_max_ms: 500 },
      servers: {
        broken: { command: '/bin/sh', args: ['-c', `echo "${WHY}" >&2; exit 1`] },
        quick: fakeServer(),
      },
    }, { waitReady: false });
    assert.ok(await waitFor(async () => {
      const st = await d.status();
      return st?.servers.some((s) => s.name === 'broken' && s.crash_looping) &&
        st.servers.some((s) => s.name === 'quick' && s.state === 'ready');
    }, 15000), d.logTail());
    ({ browser, page } = await openBrowser());
  });

  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it('shows a crash-looping server\'s last error at 1280, 1600 and 2200 px', async () => {
    const link = await mcpmux(d.socket, ['dashboard', '--no-browser']);
    assert.equal(link.code, 0, link.stderr);
    await page.goto(link.stdout.trim(), { waitUntil: 'load' });
    await page.waitForFunction(() => /crash loop/.test(
      document.querySelector('#servers tr[data-server="broken"] .state')?.textContent), { timeout: 5000 });
    const problems = [];
    for (const width of [1280, 1600, 2200]) {
      await page.setViewport({ width, height: 900 });
      await page.waitForFunction((w) => window.innerWidth === w, {}, width);
      const problem = await page.evaluate(readable, WHY);
      if (problem) problems.push(`at ${width} px: ${problem}`);
      await shoot(page, `why-${width}`);
    }
    assert.deepEqual(problems, []);
  });
});
