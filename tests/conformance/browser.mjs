#!/usr/bin/env node
// The person's browser in the conformance runs: `mcpmux auth login` opens the authorization URL
// with $BROWSER, which is this script. The suite's authorization server approves at once and
// redirects to mcpmux's loopback listener; following the redirects is all a person's browser
// would do. Exit status 0 when the last page answered 2xx.
const url = process.argv[2];
try {
  const res = await fetch(url, { redirect: 'follow' });
  const text = await res.text();
  console.error(`[browser] ${res.status} ${res.url.replace(/\?.*/, '?…')}: ${text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 160)}`);
  process.exit(res.ok ? 0 : 1);
} catch (e) {
  console.error(`[browser] ${e.message}`);
  process.exit(1);
}
