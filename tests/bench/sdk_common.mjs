// Shared by the Node benchmarks (sdk_floor.mjs, eras.mjs): calls through an SDK client, timed.

/** `n` calls of `tool`, `depth` in flight at a time: p50 latency (µs) and calls per second. */
export async function runCalls(client, tool, args, depth, n) {
  const lat = [];
  let next = 0;
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (next < n) {
      ++next;
      const s = process.hrtime.bigint();
      await client.callTool({ name: tool, arguments: args });
      lat.push(Number(process.hrtime.bigint() - s) / 1000);
    }
  };
  await Promise.all(Array.from({ length: depth }, worker));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort((a, b) => a - b);
  return { p50: lat[Math.floor(lat.length / 2)], rate: n / secs };
}

/** One row of run_all.sh's table. */
export function printRow(rowName, what, mux, direct, cmp = '') {
  console.log(`${rowName.padEnd(9)} ${what.padEnd(46)} ${mux.padStart(16)} ${direct.padStart(16)} ${cmp.padStart(18)}`);
}
