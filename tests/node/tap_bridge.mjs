#!/usr/bin/env node
// tap_bridge.mjs — a capturing stdio bridge for the schema-validation tests.
//
// usage: node tap_bridge.mjs CAPTURE_FILE -- COMMAND [ARGS...]
//
// Spawns COMMAND (normally `mcpmux --socket S connect`), pipes our stdin to its stdin and its
// stdout to our stdout unchanged, and appends every line COMMAND writes to stdout to
// CAPTURE_FILE (verbatim, one line per line). Every line that goes the other way (what the SDK
// client sends) is appended to CAPTURE_FILE + ".sent", so that the tests can tell which request
// each captured response answers. The child's stderr is passed through. We exit with the
// child's exit status; end of our stdin closes the child's stdin; SIGTERM/SIGINT are forwarded.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
if (argv.length < 3 || sep !== 1) {
  process.stderr.write('usage: node tap_bridge.mjs CAPTURE_FILE -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const capture = argv[0];
const [command, ...args] = argv.slice(2);

// Splits a byte stream into lines and appends each complete line to `file`.
function lineRecorder(file) {
  let pending = '';
  return {
    push(chunk) {
      pending += chunk.toString('utf8');
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        appendFileSync(file, pending.slice(0, nl + 1));
        pending = pending.slice(nl + 1);
      }
    },
    flush() {
      if (pending.length) appendFileSync(file, pending + '\n');
      pending = '';
    },
  };
}

const received = lineRecorder(capture);
const sent = lineRecorder(capture + '.sent');

const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('error', (err) => {
  process.stderr.write(`tap_bridge: cannot start ${command}: ${err.message}\n`);
  process.exit(127);
});

child.stdout.on('data', (chunk) => {
  received.push(chunk);
  process.stdout.write(chunk);
});

process.stdin.on('data', (chunk) => {
  sent.push(chunk);
  if (!child.stdin.destroyed) child.stdin.write(chunk);
});
process.stdin.on('end', () => {
  sent.flush();
  child.stdin.end();
});
child.stdin.on('error', () => {}); // the child may go away first; its exit decides

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    if (child.exitCode === null) child.kill(sig);
  });
}

child.on('close', (code, signal) => {
  received.flush();
  sent.flush();
  process.stdout.end(() => process.exit(code ?? (signal ? 128 : 1)));
});
