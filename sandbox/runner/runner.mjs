// mcpmux's code-mode runner: runs one agent's program (an async function body) whose tool calls
// go to the daemon as NDJSON on stdout and come back on stdin (docs/code-mode.md). The daemon
// starts it inside the runner's sandbox (sandbox/runner_command.hpp) ahead of need; it loads,
// says {"ready": true}, waits for its one program, answers {"done": …} or {"error": …} and exits.
//
// Two threads: this one keeps the protocol and the limits; the program runs in a worker, so an
// infinite loop is stopped (terminate() interrupts V8 wherever it is), a memory bomb ends the
// worker with ERR_WORKER_OUT_OF_MEMORY instead of the process, and the limits keep being
// watched while the program computes. The vm context the program gets holds only `tools`,
// `console` and the timers; it is no security boundary (the sandbox is), it keeps honest
// programs from reaching what they should not use by accident.
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { createInterface } from 'node:readline';
import { format } from 'node:util';
import vm from 'node:vm';

const self_tool = 'mcpmux__run_code';

if (isMainThread) supervise();
else program_thread();

// ---- the supervisor: NDJSON with the daemon, the limits ----

function supervise() {
  const heap_mb = Number(argument('--heap-mb') ?? 64);
  const defaults = { wall_ms: 30000, cpu_ms: 10000, output_bytes: 65536, calls: 100 };
  const worker = new Worker(new URL(import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: heap_mb, maxYoungGenerationSizeMb: 8 },
    stdout: true, stderr: true,  // the program's own writes go nowhere
  });
  let limits = defaults;
  let logs = '';
  let log_bytes = 0;
  let calls = 0;
  let started = false;
  let finished = false;
  let watch;

  const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
  const finish = (message) => {
    if (finished) return;
    finished = true;
    clearInterval(watch);
    send(message);
    // Calls still in flight are dropped: the daemon cancels what it has not answered.
    worker.terminate().finally(() => process.exit(0));
  };
  const fail = (kind, message, where = {}) => finish({ error: { kind, message, ...where, logs } });

  worker.on('message', (m) => {
    if (finished) return;
    if (m.ready) return send({ ready: true });
    if (m.log !== undefined) {
      log_bytes += Buffer.byteLength(m.log) + 1;
      if (log_bytes > limits.output_bytes)
        return fail('output', `the program's console output passed ${limits.output_bytes} bytes`);
      logs += m.log + '\n';
    } else if (m.call !== undefined) {
      if (++calls > limits.calls)
        return fail('calls', `the program made more than ${limits.calls} tool calls`);
      send({ call: m.call, tool: m.tool, arguments: m.arguments });
    } else if (m.done) {
      finish({ done: { value: m.value, logs } });
    } else if (m.error) {
      fail(m.error.kind, m.error.message, m.error.where);
    }
  });
  worker.on('error', (e) => {
    if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY')
      fail('memory', `the program used more than its ${heap_mb} MiB of memory`);
    else fail('exception', `the runner failed: ${e?.message ?? e}`);
  });
  worker.on('exit', () => fail('exception', 'the program ended without an answer'));

  const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
  input.on('line', (line) => {
    let m;
    try { m = JSON.parse(line); } catch { return; }  // the daemon writes JSON; ignore noise
    if (m.program !== undefined && !started) {
      started = true;
      limits = { ...defaults, ...(m.limits ?? {}) };
      const t0 = process.hrtime.bigint();
      const cpu0 = process.cpuUsage();
      watch = setInterval(() => {
        const ms = Number((process.hrtime.bigint() - t0) / 1000000n);
        const cpu = process.cpuUsage(cpu0);
        if (ms > limits.wall_ms)
          fail('timeout', `the program ran longer than ${limits.wall_ms} ms`);
        else if ((cpu.user + cpu.system) / 1000 > limits.cpu_ms)
          fail('timeout', `the program used more than ${limits.cpu_ms} ms of CPU time`);
      }, 10);
      worker.postMessage({ program: String(m.program), tools: m.tools ?? [] });
    } else if (m.result !== undefined && started) {
      worker.postMessage({ result: m.result, answer: m });
    }
  });
  // The daemon gone before the program came: nothing to run. After it, the answers already
  // read still count and the limits end the rest.
  input.on('close', () => { if (!started) process.exit(0); });
}

function argument(name) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

// ---- the program's thread ----

function program_thread() {
  const pending = new Map();
  let next_id = 1;
  parentPort.on('message', (m) => {
    if (m.program !== undefined) return run(m.program, m.tools);
    const waiter = pending.get(m.result);
    if (!waiter) return;  // answered twice, or never asked
    pending.delete(m.result);
    settle(waiter, m.answer);
  });
  // A call the program never awaited may fail after it moved on: dropped like its answer,
  // rather than ending the thread as Node does with an unhandled rejection.
  process.on('unhandledRejection', () => {});
  parentPort.postMessage({ ready: true });

  function call(name, args) {
    if (name === self_tool)
      return Promise.reject(new Error(`${self_tool} cannot be called from inside a program`));
    return new Promise((resolve, reject) => {
      const id = next_id++;
      pending.set(id, { resolve, reject, name });
      parentPort.postMessage({ call: id, tool: name, arguments: args ?? {} });
    });
  }

  function run(source, tool_list) {
    const console = make_console();
    const tools = make_tools(tool_list, call);
    let fn;
    try {
      // Timers for a program that waits between calls (polling); the wall limit bounds them.
      const context = vm.createContext({ tools, console, setTimeout, clearTimeout },
                                       { codeGeneration: { strings: false, wasm: false } });
      // The body starts on the wrapper's second line: lineOffset -1 numbers it from 1.
      fn = new vm.Script(`(async (tools, console) => {\n${source}\n})`,
                         { filename: 'program.js', lineOffset: -1 }).runInContext(context);
    } catch (e) {
      return parentPort.postMessage({ error: { kind: 'syntax', message: String(e?.message),
                                               where: syntax_position(e) } });
    }
    Promise.resolve()
      .then(() => fn(tools, console))
      .then((value) => {
        let json;
        try { json = value === undefined ? null : JSON.parse(JSON.stringify(value)); }
        catch (e) {
          return parentPort.postMessage({ error: { kind: 'exception',
            message: `the program's return value is not JSON: ${e.message}` } });
        }
        parentPort.postMessage({ done: true, value: json ?? null });
      }, (e) => parentPort.postMessage({ error: {
        kind: out_of_memory(e) ? 'memory' : 'exception',
        message: describe(e),
        where: stack_position(e),
      } }));
  }

  function make_console() {
    const log = (...args) => parentPort.postMessage({ log: format(...args) });
    return { log, info: log, warn: log, error: log, debug: log };
  }
}

// tools.SERVER.TOOL(args) and tools["SERVER__TOOL"](args); a name the program was not given is
// an error that says so rather than JavaScript's "undefined is not a function".
function make_tools(list, call) {
  const flat = new Map();
  const servers = new Map();
  for (const t of list) {
    const entry = typeof t === 'string' ? split_name(t) : t;
    if (!entry?.name) continue;
    const fn = (args) => call(entry.name, args);
    flat.set(entry.name, fn);
    if (!servers.has(entry.server)) servers.set(entry.server, new Map());
    servers.get(entry.server).set(entry.tool, fn);
  }
  const unknown = (name) => () =>
    Promise.reject(new Error(name === self_tool
        ? `${self_tool} cannot be called from inside a program`
        : `unknown tool ${name}: not one this program may call`));
  const server_view = (server, tools) => new Proxy({}, {
    get: (_, tool) => typeof tool === 'string'
        ? (tools?.get(tool) ?? unknown(`${server}__${tool}`)) : undefined,
    ownKeys: () => [...(tools?.keys() ?? [])],
    getOwnPropertyDescriptor: (_, k) => tools?.has(k)
        ? { value: tools.get(k), enumerable: true, configurable: true } : undefined,
  });
  return new Proxy({}, {
    get: (_, key) => {
      if (typeof key !== 'string') return undefined;
      if (flat.has(key)) return flat.get(key);
      if (servers.has(key)) return server_view(key, servers.get(key));
      return key.includes('__') ? unknown(key) : server_view(key, undefined);
    },
    ownKeys: () => [...servers.keys()],
    getOwnPropertyDescriptor: (_, k) => servers.has(k)
        ? { value: server_view(k, servers.get(k)), enumerable: true, configurable: true }
        : undefined,
  });
}

function split_name(name) {
  const at = name.indexOf('__');
  return at > 0 ? { name, server: name.slice(0, at), tool: name.slice(at + 2) }
                : { name, server: name, tool: name };
}

// A result with structuredContent is the object; otherwise its text. isError, or an error the
// daemon answered (unknown tool, refused, timed out), throws with the message.
function settle(waiter, answer) {
  if (answer.error) return waiter.reject(new Error(`${waiter.name}: ${answer.error.message}`));
  const text = (answer.content ?? []).filter((c) => c?.type === 'text').map((c) => c.text)
      .join('\n');
  if (answer.isError) return waiter.reject(new Error(`${waiter.name}: ${text}`));
  waiter.resolve(answer.structuredContent ?? text);
}

// Array buffers live outside the heap: their limit is the process's address space, and passing
// it throws this rather than ending the worker.
function out_of_memory(e) {
  return e?.name === 'RangeError' && /Array buffer allocation failed/.test(e.message);
}

function describe(e) {
  if (e && typeof e === 'object' && 'message' in e) return `${e.name ?? 'Error'}: ${e.message}`;
  try { return `uncaught ${JSON.stringify(e)}`; } catch { return `uncaught ${String(e)}`; }
}

// "program.js:LINE\n<code>\n<spaces>^^^" heads a SyntaxError's stack: line, and the caret's
// column (1-based).
function syntax_position(e) {
  const lines = String(e?.stack ?? '').split('\n');
  const m = /^program\.js:(\d+)$/.exec(lines[0] ?? '');
  if (!m) return {};
  const caret = (lines[2] ?? '').indexOf('^');
  return { line: Number(m[1]), column: caret >= 0 ? caret + 1 : undefined };
}

// The first frame in the program, and the stack cut to the program's frames (the runner's own
// are no business of the model's).
function stack_position(e) {
  const stack = typeof e?.stack === 'string' ? e.stack : '';
  const own = stack.split('\n').filter((l, i) => i === 0 || l.includes('program.js'));
  const m = /program\.js:(\d+):(\d+)/.exec(own.slice(1).join('\n'));
  return { stack: own.join('\n'), ...(m ? { line: Number(m[1]), column: Number(m[2]) } : {}) };
}
