// The dashboard in a real browser: Debian's chromium, headless, driven by puppeteer-core. The
// page opens from the one-time link `mcpmux dashboard` prints, loads with no console error,
// turns a killed server red and back to green within seconds, restarts a server from its
// button, and refuses a POST without the session's key and one from another origin. Screenshots
// go to build/test-output/dashboard/.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openBrowser, shoot } from './browser.mjs';
import { fakeServer, freePort, mcpmux, startDaemon, waitFor } from './harness.mjs';

describe('the dashboard in a real browser', () => {
  let d, browser, page, base, cookie, errors;
  const pidOf = async (name) => (await d.status()).servers.find((s) => s.name === name)?.pid;
  const rowState = (name) => page.$eval(`#servers tr[data-server="${name}"] .state`, (e) => e.className);

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    d = await startDaemon({
      daemon: { http: `127.0.0.1:${port}` },
      // slow: 1.5 s to come back after a kill, long enough to be seen down.
      servers: { slow: fakeServer({ args: ['--init-delay-ms', '1500'] }), quick: fakeServer() },
    });
    ({ browser, page, errors } = await openBrowser());
  });

  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it('opens from the one-time link and shows every server, with nothing from elsewhere', async () => {
    const link = await mcpmux(d.socket, ['dashboard', '--no-browser']);
    assert.equal(link.code, 0, link.stderr);
    const url = link.stdout.trim();
    assert.match(url, new RegExp(`^${base}/login\\?code=[0-9a-f]{64}$`));
    const res = await page.goto(url, { waitUntil: 'load' });
    assert.equal(new URL(page.url()).pathname, '/');
    assert.match(res.headers()['content-security-policy'], /default-src 'none'; script-src 'self'/);
    await page.waitForSelector('#servers tr[data-server="quick"][data-state="ready"]');
    await page.waitForSelector('#servers tr[data-server="slow"][data-state="ready"]');
    await shoot(page, 'ready');
    assert.match(await page.$eval('#summary', (e) => e.textContent), /2 of 2 servers ready/);
    // The last hour: a sparkline per server, its figures in its accessible name: the sample the
    // daemon took at start, and the minute so far. Calls show up in it as they are made.
    const spark = () => page.$eval('#servers tr[data-server="quick"] svg.spark', (e) => e.getAttribute('aria-label'));
    assert.match(await spark(), /^last 2 min: 0 calls, at most 0 a minute$/);
    const client = await d.connect();
    for (let i = 0; i < 7; i++) await client.callTool({ name: 'quick__echo', arguments: { text: `${i}` } });
    await page.waitForFunction(() => /: 7 calls, at most 7 a minute; p50 up to /.test(
      document.querySelector('#servers tr[data-server="quick"] svg.spark')?.getAttribute('aria-label')), { timeout: 5000 });
    assert.equal(await page.$$eval('#servers tr[data-server="quick"] svg.spark rect.calls', (r) => r.length), 1);
    assert.match(await spark(), /^last 2 min: 7 calls/);
    // The session cookie is HttpOnly (the page's script cannot read it) and the link is spent.
    assert.equal(await page.evaluate(() => document.cookie), '');
    [cookie] = await browser.cookies();
    assert.equal(cookie.name, 'mcpmux_dashboard');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal((await fetch(url, { redirect: 'manual' })).status, 403);
    assert.equal((await fetch(`${base}/`)).status, 401);
    // The session's key is in this tab's sessionStorage, not in the page a reload gets: that
    // reload still shows the servers, while another tab (storage of its own) has no session.
    const key = await page.evaluate(() => sessionStorage.getItem('mcpmux-dashboard-key'));
    assert.match(key, /^[0-9a-f]{64}$/);
    const shell = await (await fetch(`${base}/`, { headers: { cookie: `${cookie.name}=${cookie.value}` } })).text();
    assert.ok(!shell.includes(key), 'the page a cookie gets carries the key');
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('#servers tr[data-server="quick"][data-state="ready"]');
    const other = await browser.newPage();
    await other.goto(`${base}/`, { waitUntil: 'load' });
    await other.waitForFunction(() => /no dashboard session/.test(document.querySelector('#summary').textContent));
    assert.equal(await other.$$eval('#servers tbody tr', (r) => r.length), 0);
    await other.close();
    // The whole page is small.
    const sizes = await Promise.all(['/', '/dashboard.css', '/dashboard.js'].map(async (p) =>
      (await (await fetch(`${base}${p}`, { headers: { cookie: `${cookie.name}=${cookie.value}` } })).text()).length));
    assert.ok(sizes.reduce((a, b) => a + b) < 100 * 1024, `${sizes}`);
  });

  it('a killed server turns red, then green again, without a reload of the page', async () => {
    const pid = await pidOf('slow');
    process.kill(pid, 'SIGKILL');
    await page.waitForFunction(() => document.querySelector('#servers tr[data-server="slow"] .state')?.classList.contains('down'), { timeout: 5000 });
    await shoot(page, 'down');
    await page.waitForFunction(() => document.querySelector('#servers tr[data-server="slow"] .state')?.classList.contains('up'), { timeout: 10000 });
    assert.notEqual(await pidOf('slow'), pid);
    assert.match(await rowState('quick'), /up/);
  });

  it('the restart button restarts its server', async () => {
    const pid = await pidOf('quick');
    await page.click('button[aria-label="Restart quick"]');
    assert.ok(await waitFor(async () => { const now = await pidOf('quick'); return now && now !== pid; }, 5000));
    await page.waitForFunction(() => /quick: restarting/.test(document.querySelector('#message').textContent));
    // Everything so far went without a console error (the refusals below log their 403s).
    assert.deepEqual(errors, [], `console errors: ${errors.join('\n')}`);
  });

  it('works with the keyboard alone, reflows at 200 % zoom, and comes light and dark', async () => {
    // Tab to quick's Restart button and press Enter: the server restarts.
    const pid = await pidOf('quick');
    let focused = '';
    for (let i = 0; i < 20 && focused !== 'Restart quick'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? '');
    }
    assert.equal(focused, 'Restart quick');
    // (Focus is visible: the button has an outline while focused from the keyboard.)
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none');
    // The page's updates (every 2 s at least) leave the focus where it is.
    const summary = await page.$eval('#summary', (e) => e.textContent);
    await page.waitForFunction((before) => document.querySelector('#summary').textContent !== before, { timeout: 5000, polling: 100 }, summary);
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Restart quick');
    await page.keyboard.press('Enter');
    assert.ok(await waitFor(async () => { const now = await pidOf('quick'); return now && now !== pid; }, 5000));
    // 200 % zoom is half the width in CSS pixels: the page reflows, and only the tables scroll
    // sideways inside their own box.
    await page.setViewport({ width: 720, height: 900 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window`);
    await shoot(page, 'zoom-200');
    await page.setViewport({ width: 1440, height: 900 });
    await page.waitForSelector('#servers tr[data-server="quick"][data-state="ready"]');
    // Light and dark follow the desktop's scheme.
    const colours = () => page.evaluate(() => [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]);
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    assert.deepEqual(await colours(), ['rgb(255, 255, 255)', 'rgb(27, 27, 31)']);
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    assert.deepEqual(await colours(), ['rgb(22, 22, 26)', 'rgb(232, 232, 238)']);
    await shoot(page, 'dark');
    await page.emulateMediaFeatures([]);
  });

  it('refuses an action without the session\'s key or from another origin', async () => {
    const body = JSON.stringify({ method: 'mcpmux/restart', params: { server: 'quick' } });
    // From the page itself, without the key: 403.
    const fromPage = await page.evaluate(async (b) => (await fetch('/dashboard/action', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: b })).status, body);
    assert.equal(fromPage, 403);
    // With the cookie and the key, but another Origin (a site the browser visited, or another
    // port of this host): 403.
    const key = await page.evaluate(() => sessionStorage.getItem('mcpmux-dashboard-key'));
    for (const origin of ['http://evil.example', `http://127.0.0.1:${Number(new URL(base).port) + 1}`]) {
      const other = await fetch(`${base}/dashboard/action`, {
        method: 'POST',
        headers: { cookie: `${cookie.name}=${cookie.value}`, 'x-dashboard-key': key, 'content-type': 'application/json', origin },
        body,
      });
      assert.equal(other.status, 403, origin);
    }
    // A form post (no JSON) with both: refused too; and a method the page may not call.
    const form = await fetch(`${base}/dashboard/action`, {
      method: 'POST', headers: { cookie: `${cookie.name}=${cookie.value}`, 'x-dashboard-key': key, 'content-type': 'text/plain' }, body,
    });
    assert.equal(form.status, 415);
    const notAllowed = await page.evaluate(async (t) => (await fetch('/dashboard/action', {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-dashboard-key': t },
      body: JSON.stringify({ method: 'mcpmux/dashboard/login' }) })).status, key);
    assert.equal(notAllowed, 403);
  });

  it('reload shows the errors of an invalid config and changes nothing', async () => {
    const { writeFileSync, readFileSync } = await import('node:fs');
    const good = readFileSync(d.configFile, 'utf8');
    writeFileSync(d.configFile, `${good}\n[servers.broken]\ncomand = "x"\n`);
    await page.click('#reload');
    await page.waitForFunction(() => /not loaded: .*comand/.test(document.querySelector('#message').textContent), { timeout: 5000 });
    await shoot(page, 'reload-error');
    writeFileSync(d.configFile, good);
    assert.equal((await d.status()).servers.length, 2);
    assert.ok(errors.every((e) => /status of 403/.test(e)), `console errors: ${errors.join('\n')}`);
  });

  it('keeps at most 16 login links and 32 browser sessions, dropping the oldest', async () => {
    const link = async () => JSON.parse((await mcpmux(d.socket, ['dashboard', '--no-browser', '--json'])).stdout).url;
    const use = (url) => fetch(url, { redirect: 'manual' });
    const links = [];
    for (let i = 0; i < 17; i++) links.push(await link());
    assert.equal((await use(links[0])).status, 403, 'the oldest link was dropped');
    assert.equal((await use(links[16])).status, 200);
    assert.equal((await use(links[1])).status, 200);
    // Sessions: the oldest of 33 is logged out (the page's own, so this test comes last).
    const cookies = [];
    for (let i = 0; i < 33; i++) {
      const res = await use(await link());
      cookies.push(res.headers.get('set-cookie').split(';')[0]);
    }
    const page = (c) => fetch(`${base}/`, { headers: { cookie: c } }).then((r) => r.status);
    assert.equal(await page(cookies[0]), 401);
    assert.equal(await page(cookies[32]), 200);
    assert.equal(await page(cookies[1]), 200);
  });
});
