// tasks.test.mjs — the tasks extension (io.modelcontextprotocol/tasks, SEP-2663) through mcpmux:
// a 2026-07-28 client on the Unix socket (NDJSON, as `mcpmux connect` relays it), the
// conformance suite's tasks target behind mcpmux. Task ids come back scoped to their server,
// tasks/get, tasks/update and tasks/cancel reach the owner, a listen stream with taskIds carries
// the task's status notifications, and every use without the extension is refused with -32021.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { startDaemon, waitFor, NODE, HERE } from './harness.mjs';

const TASKS_JS = path.join(HERE, '../conformance/target_server_tasks.mjs');
const TASKS = 'io.modelcontextprotocol/tasks';
const meta = (caps = { extensions: { [TASKS]: {} } }) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': caps,
});

/** A modern client on the daemon's socket: request() resolves with the whole answer. */
class SocketClient {
  constructor(socketPath) {
    this.sock = net.createConnection(socketPath);
    this.next = 1;
    this.waiting = new Map();
    this.notifications = [];
    let buf = '';
    this.sock.setEncoding('utf8');
    this.sock.on('data', (chunk) => {
      buf += chunk;
      for (let nl; (nl = buf.indexOf('\n')) >= 0; ) {
        const msg = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (msg.method) this.notifications.push(msg);
        else this.waiting.get(msg.id)?.(msg);
      }
    });
  }
  request(method, params = {}, caps) {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.sock.write(JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(caps) } }) + '\n');
    });
  }
  cancel(id) {
    this.sock.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }) + '\n');
  }
  close() {
    this.sock.end();
  }
}

describe('the tasks extension through mcpmux', () => {
  let daemon;
  let client;

  before(async () => {
    daemon = await startDaemon({ daemon: { timeout_ms: 20000 }, servers: { jobs: { command: NODE, args: [TASKS_JS] } } });
    client = new SocketClient(daemon.socket);
  });

  after(async () => {
    client?.close();
    await daemon?.stop();
  });

  it('discover advertises the extension of the server behind', async () => {
    const r = await client.request('server/discover');
    assert.deepEqual(r.result.capabilities.extensions, { [TASKS]: {} });
    assert.equal(r.result.capabilities.tasks, undefined);
  });

  it('a task s id is scoped to its server; tasks/get with it reaches the owner', async () => {
    const created = await client.request('tools/call', { name: 'jobs__slow_compute', arguments: { seconds: 0.3 } });
    assert.equal(created.result.resultType, 'task', JSON.stringify(created));
    assert.match(created.result.taskId, /^jobs\/./);
    let got;
    assert.ok(await waitFor(async () => {
      got = await client.request('tasks/get', { taskId: created.result.taskId });
      return got.result?.status === 'completed';
    }, 5000, 100), JSON.stringify(got));
    assert.equal(got.result.taskId, created.result.taskId);
    assert.equal(got.result.resultType, 'complete');
    assert.ok(Array.isArray(got.result.result.content));
  });

  it('a listen stream with taskIds carries the task s status, named as the client knows it', async () => {
    const created = await client.request('tools/call', { name: 'jobs__slow_compute', arguments: { seconds: 0.5 } });
    const taskId = created.result.taskId;
    client.notifications.length = 0;
    const listen = client.request('subscriptions/listen', { notifications: { taskIds: [taskId, 'nosuch/x'] } });
    void listen;
    assert.ok(await waitFor(() => client.notifications.some((n) => n.method === 'notifications/subscriptions/acknowledged')));
    const ack = client.notifications.find((n) => n.method === 'notifications/subscriptions/acknowledged');
    assert.deepEqual(ack.params.notifications.taskIds, [taskId]); // a server that is not mcpmux's is left out
    const listenId = ack.params._meta['io.modelcontextprotocol/subscriptionId'];
    assert.ok(await waitFor(() => client.notifications.some((n) => n.method === 'notifications/tasks' && n.params.status === 'completed'), 5000),
      JSON.stringify(client.notifications));
    for (const n of client.notifications.filter((m) => m.method === 'notifications/tasks')) {
      assert.equal(n.params.taskId, taskId);
      assert.equal(n.params._meta['io.modelcontextprotocol/subscriptionId'], listenId);
    }
    client.cancel(listenId);
  });

  it('tasks/cancel reaches the owner; the task ends cancelled', async () => {
    const created = await client.request('tools/call', { name: 'jobs__slow_compute', arguments: { seconds: 30 } });
    const ack = await client.request('tasks/cancel', { taskId: created.result.taskId });
    assert.equal(ack.result.resultType, 'complete', JSON.stringify(ack));
    let got;
    assert.ok(await waitFor(async () => {
      got = await client.request('tasks/get', { taskId: created.result.taskId });
      return got.result?.status === 'cancelled';
    }, 5000, 100), JSON.stringify(got));
  });

  it('without the extension: -32021 naming it, before any lookup', async () => {
    for (const [method, params] of [
      ['tasks/get', { taskId: 'jobs/whatever' }],
      ['tasks/cancel', { taskId: 'nosuch' }],
      ['subscriptions/listen', { notifications: { taskIds: ['jobs/x'] } }],
    ]) {
      const r = await client.request(method, params, {});
      assert.equal(r.error?.code, -32021, `${method}: ${JSON.stringify(r)}`);
      assert.deepEqual(r.error.data.requiredCapabilities, { extensions: { [TASKS]: {} } });
    }
    // A tool that needs a task is refused by its server for a client without the extension.
    const r = await client.request('tools/call', { name: 'jobs__failing_job', arguments: {} }, {});
    assert.equal(r.error?.code, -32021, JSON.stringify(r));
  });

  it('an unknown or malformed task id is -32602; tasks/list and tasks/result do not exist', async () => {
    for (const taskId of ['nosuch/abc', 'no-slash', 'jobs/never-created']) {
      const r = await client.request('tasks/get', { taskId });
      assert.equal(r.error?.code, -32602, `${taskId}: ${JSON.stringify(r)}`);
    }
    assert.equal((await client.request('tasks/get', { taskId: 42 })).error?.code, -32602);
    assert.equal((await client.request('tasks/list')).error?.code, -32601);
    assert.equal((await client.request('tasks/result', { taskId: 'jobs/x' })).error?.code, -32601);
  });
});
