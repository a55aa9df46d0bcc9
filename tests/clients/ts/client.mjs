// A second MCP client for ADE's protocol tests: the TypeScript SDK's own client, on a given protocol revision.
//
//   node client.mjs '<plan as JSON>'
//
// plan: {transport: "stdio" | "http", command, args, env (stdio) | url (http), revision: "2026-07-28" | "2025-11-25",
//        sdk: "v2" (@modelcontextprotocol/client, speaks 2026-07-28 and 2025-11-25) | "v1" (@modelcontextprotocol/sdk,
//        up to 2025-11-25), cached: {name, arguments}, plain: {name, arguments}, task: {name, arguments} (2026 only),
//        listen: {uri, count, timeout_ms} (push: subscribe and report what is heard instead of the calls)}
//
// It connects, lists the tools (the raw list result, for its cache hints), calls the cached tool and the
// task-capable tool as plain calls, and on 2026-07-28 runs the task-capable tool as a task (the tasks extension,
// SEP-2663: the call answers a task id at once; tasks/get reports status and progress, then the result). It prints
// one JSON object on stdout; the pytest that runs it (tests/clients/test_ts_client.py) asserts on it.

const plan = JSON.parse(process.argv[2]);
const TASKS = "io.modelcontextprotocol/tasks";
const modern = plan.revision !== "2025-11-25";

async function sdk() {
  if (plan.sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    return { Client, StdioClientTransport, StreamableHTTPClientTransport };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  return { Client, StdioClientTransport, StreamableHTTPClientTransport };
}

function transportOf(lib) {
  if (plan.transport === "stdio") {
    return new lib.StdioClientTransport({
      command: plan.command,
      args: plan.args,
      env: { ...process.env, ...(plan.env || {}) },
      stderr: "ignore",
    });
  }
  return new lib.StreamableHTTPClientTransport(new URL(plan.url));
}

// The raw JSON-RPC responses by request id: what the wire carried, before the SDK decodes it (the cache hints,
// and a task-augmented call's CreateTaskResult, which this SDK has no extension to decode).
const raw = new Map();
function tap(transport) {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message && message.id !== undefined && (message.result || message.error)) raw.set(message.id, message);
    return deliver?.(message, extra);
  };
}

function lastRaw(predicate) {
  return [...raw.values()].reverse().find(predicate);
}

// A client that declares the tasks extension has every call of a task-capable tool run as a task: the plain
// calls go through one that does not.
async function connected(lib, withTasks) {
  const options = { capabilities: withTasks ? { extensions: { [TASKS]: {} } } : {} };
  if (plan.sdk !== "v1" && modern) options.versionNegotiation = { mode: { pin: plan.revision } };
  const client = new lib.Client({ name: "ade-ts-test-client", version: "1.0.0" }, options);
  const transport = transportOf(lib);
  // v1 tells the transport the revision the server chose (HTTP keeps it for its header; stdio has no setter)
  const keep = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    transport.negotiated = version;
    keep?.(version);
  };
  await client.connect(transport);
  tap(transport);
  return { client, transport };
}

// Push: subscribe to a resource (resources/subscribe, 2025-11-25), say so on stdout ({"ready": true}), then wait
// for `notifications/resources/updated` and print what was heard ({"heard": [uri, ...]}) after `plan.listen.count`
// of them, or after `plan.listen.timeout_ms` with what was heard so far.
async function listenFor(lib) {
  const { client } = await connected(lib, false);
  const heard = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const onUpdated = (note) => {
    heard.push(note.params.uri);
    if (heard.length >= plan.listen.count) done();
  };
  if (plan.sdk === "v1") {  // v1 keys handlers by the notification's schema, v2 by its method
    const { ResourceUpdatedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, onUpdated);
  } else {
    client.setNotificationHandler("notifications/resources/updated", onUpdated);
  }
  await client.subscribeResource({ uri: plan.listen.uri });
  process.stdout.write(JSON.stringify({ ready: true }) + "\n");
  await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, plan.listen.timeout_ms))]);
  const read = await client.readResource({ uri: plan.listen.uri });
  await client.close();
  process.stdout.write(JSON.stringify({ heard, read: read.contents.map((c) => c.text) }) + "\n");
}

async function main() {
  const lib = await sdk();
  if (plan.listen) return listenFor(lib);
  const { client, transport } = await connected(lib, false);
  const out = {
    sdk: plan.sdk,
    protocolVersion: client.getNegotiatedProtocolVersion?.() ?? transport.negotiated ?? null,
  };
  const listed = await client.listTools();
  const rawList = lastRaw((m) => m.result && Array.isArray(m.result.tools));
  out.tools = listed.tools.map((t) => t.name);
  out.listHints = { ttlMs: rawList?.result.ttlMs ?? null, cacheScope: rawList?.result.cacheScope ?? null };
  out.cached = await client.callTool(plan.cached);
  out.plain = await client.callTool(plan.plain);
  await client.close();
  if (modern && plan.task) {
    const tasking = await connected(lib, true);
    out.task = await asTask(tasking.client, plan.task);
    await tasking.client.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

// A task-augmented call: the client declared the tasks extension (its per-request capabilities carry it), so the
// server answers with a task. The SDK's own call rejects that result type; the task id is read from the wire and
// the task driven with tasks/get, which the SDK sends as the extension's method.
async function asTask(client, call) {
  const started = Date.now();
  let refused = null;
  try {
    await client.callTool(call);
  } catch (error) {
    refused = String(error?.code ?? error?.message ?? error);
  }
  const created = lastRaw((m) => m.result && m.result.resultType === "task");
  if (!created) return { error: "no task was created", refused };
  const taskId = created.result.taskId;
  const statuses = [created.result.status];
  const messages = [];
  const any = { "~standard": { version: 1, vendor: "ade", validate: (value) => ({ value }) } };
  let got;
  for (;;) {
    got = await client.request({ method: "tasks/get", params: { taskId } }, any);
    if (got.statusMessage) messages.push(got.statusMessage);
    if (statuses[statuses.length - 1] !== got.status) statuses.push(got.status);
    if (!["working", "input_required"].includes(got.status)) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(got.pollIntervalMs ?? 500, 500)));
  }
  return {
    taskId,
    createdWithin: Date.now() - started,
    statuses,
    messages,
    result: got.result ?? null,
    error: got.error ?? null,
  };
}

main().catch((error) => {
  process.stdout.write(JSON.stringify({ failed: String(error?.stack ?? error) }) + "\n");
  process.exit(1);
});
