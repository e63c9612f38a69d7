// Debian's chromium, headless, driven by puppeteer-core: for the dashboard's tests. Screenshots
// go to build/test-output/dashboard/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { HERE } from './harness.mjs';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = path.resolve(HERE, '../../build/test-output/dashboard');

/** Launches the browser and opens a 1440 × 900 page; `errors` collects its console errors. */
export async function openBrowser() {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM} (scripts/install-deps installs chromium)`);
  mkdirSync(SHOTS, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1440, height: 900 });
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  return { browser, page, errors };
}

/** A screenshot of the whole page, as build/test-output/dashboard/NAME.png. */
export const shoot = (page, name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
