// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk,
// stable v1 entrypoint) that drives Loop's agent over stdin/stdout and checks
// everything the agent sends against the SDK's own zod schemas.
//
//   node client.mjs <cwd> <result.json>
//
// The SDK validates incoming requests and notifications itself and drops
// invalid ones; it does not validate responses, and its parsing is lenient
// (an invalid optional field becomes its default). So every message is also
// parsed here and compared with what was received: a field the schema had
// to drop or replace is reported. The Go test counts the session/update
// frames it sent and compares with `updates` here, which catches drops.
// Only stderr and the result file are written: stdout is the protocol.

import { PassThrough, Readable, Writable } from "node:stream";
import { readFileSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk";

const z = await import(new URL("./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js", import.meta.url).href);

const [cwd, outFile] = process.argv.slice(2);
const result = {
  problems: [], updates: 0, kinds: {}, permissions: 0, stopReasons: [], titles: [], replayed: 0,
  fsReads: 0, fsWrites: 0, terminals: 0, released: 0, terminalOutput: "",
};

// Fields Loop sends on purpose that stable v1 does not define: the legacy
// (pre-configOptions) model block, for clients that still use session/set_model,
// the prompt response's token usage, and sessionCapabilities.fork (session/fork),
// which the unstable schema defines (docs/acp.md).
const extensions = new Set(["models", "usage", "fork"]);

function check(what, schema, value) {
  const r = schema.safeParse(value);
  if (!r.success) {
    result.problems.push(`${what}: ${r.error.message}`);
    return;
  }
  result.problems.push(...lost(value, r.data, what));
}

// lost lists what parsing dropped or changed.
function lost(sent, parsed, path) {
  if (sent === null || typeof sent !== "object") {
    return sent === parsed ? [] : [`${path}: ${JSON.stringify(sent)} parsed as ${JSON.stringify(parsed)}`];
  }
  if (Array.isArray(sent)) {
    if (!Array.isArray(parsed) || parsed.length !== sent.length) {
      return [`${path}: array parsed as ${JSON.stringify(parsed)}`];
    }
    return sent.flatMap((v, i) => lost(v, parsed[i], `${path}[${i}]`));
  }
  if (parsed === null || typeof parsed !== "object") {
    return [`${path}: object parsed as ${JSON.stringify(parsed)}`];
  }
  return Object.keys(sent).flatMap((k) => {
    if (extensions.has(k)) return [];
    if (!(k in parsed)) return [`${path}.${k}: dropped by the schema`];
    return lost(sent[k], parsed[k], `${path}.${k}`);
  });
}

let loading = false;
const app = acp
  .client({ name: "loop-interop" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    result.updates++;
    const kind = params.update.sessionUpdate;
    result.kinds[kind] = (result.kinds[kind] ?? 0) + 1;
    if (kind === "session_info_update" && params.update.title) result.titles.push(params.update.title);
    if (loading) result.replayed++;
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    result.permissions++;
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  // The editor side of fs/* and terminal/*: files on disk, and commands
  // spawned as the schema says, `command` a program and `args` its
  // arguments, without a shell (Loop sends a shell, -c and the line).
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    result.fsReads++;
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    result.fsWrites++;
    writeFileSync(params.path, params.content);
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    result.terminals++;
    const env = { ...process.env };
    for (const v of params.env ?? []) env[v.name] = v.value;
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? cwd, env, detached: true });
    const t = { child, output: "", exit: null };
    t.exited = new Promise((resolve) => child.on("exit", (exitCode, signal) => resolve((t.exit = { exitCode, signal }))));
    child.stdout.on("data", (d) => (t.output += d));
    child.stderr.on("data", (d) => (t.output += d));
    const terminalId = `t${result.terminals}`;
    terminals.set(terminalId, t);
    return { terminalId };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => await terminals.get(params.terminalId).exited)
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    const t = terminals.get(params.terminalId);
    result.terminalOutput += t.output;
    return { output: t.output, truncated: false, ...(t.exit ? { exitStatus: t.exit } : {}) };
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    const t = terminals.get(params.terminalId);
    if (!t.exit) process.kill(-t.child.pid, "SIGKILL");
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    const t = terminals.get(params.terminalId);
    if (!t.exit) process.kill(-t.child.pid, "SIGKILL");
    terminals.delete(params.terminalId);
    result.released++;
    return {};
  });

const terminals = new Map();

// Agent-to-client requests checked against the schema as they arrive.
const requestSchemas = {
  "session/request_permission": z.zRequestPermissionRequest,
  "fs/read_text_file": z.zReadTextFileRequest,
  "fs/write_text_file": z.zWriteTextFileRequest,
  "terminal/create": z.zCreateTerminalRequest,
  "terminal/output": z.zTerminalOutputRequest,
  "terminal/wait_for_exit": z.zWaitForTerminalExitRequest,
  "terminal/kill": z.zKillTerminalRequest,
  "terminal/release": z.zReleaseTerminalRequest,
};

// The SDK hands handlers the params it parsed (lenient defaults applied), so
// requests and notifications are checked as they arrive on the wire.
const tap = new PassThrough();
let pending = "";
process.stdin.on("data", (chunk) => {
  pending += chunk;
  for (let i; (i = pending.indexOf("\n")) >= 0; ) {
    const line = pending.slice(0, i);
    pending = pending.slice(i + 1);
    if (line.trim() !== "") inspect(line);
  }
});
process.stdin.pipe(tap);

function inspect(line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    result.problems.push(`not JSON on stdout: ${line.slice(0, 200)}`);
    return;
  }
  if (msg.jsonrpc !== "2.0") result.problems.push(`no "jsonrpc":"2.0": ${line.slice(0, 200)}`);
  if (msg.method === "session/update") {
    result.sent = (result.sent ?? 0) + 1;
    check(`session/update ${msg.params?.update?.sessionUpdate}`, z.zSessionNotification, msg.params);
  } else if (requestSchemas[msg.method]) {
    check(msg.method, requestSchemas[msg.method], msg.params);
  } else if (msg.method && msg.method !== "$/cancel_request") {
    result.problems.push(`unexpected method ${msg.method}`);
  }
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(tap));

async function main(ctx) {
  const A = acp.methods.agent;
  const call = async (method, params, schema) => {
    const res = await ctx.request(method, params);
    if (schema) check(method, schema, res ?? {});
    return res;
  };
  await call(A.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    clientInfo: { name: "loop-interop", version: "1" },
  }, z.zInitializeResponse);
  const ns = await call(A.session.new, { cwd, mcpServers: [] }, z.zNewSessionResponse);
  const sessionId = ns.sessionId;
  await call(A.session.setMode, { sessionId, modeId: "ask" }, z.zSetSessionModeResponse);
  await call(A.session.setConfigOption, { sessionId, configId: "effort", value: "high" }, z.zSetSessionConfigOptionResponse);

  const pr = await call(A.session.prompt, { sessionId, prompt: [{ type: "text", text: "look around" }] }, z.zPromptResponse);
  result.stopReasons.push(pr.stopReason);
  // The title is generated after the turn; wait for its update.
  for (let i = 0; i < 500 && result.titles.length === 0; i++) await new Promise((r) => setTimeout(r, 10));

  await call(A.session.list, { cwd }, z.zListSessionsResponse);
  loading = true;
  await call(A.session.load, { sessionId, cwd, mcpServers: [] }, z.zLoadSessionResponse);
  loading = false;
  await call(A.session.resume, { sessionId, cwd }, z.zResumeSessionResponse);

  // Cancel a hanging turn once its first chunk arrived.
  const before = result.kinds.agent_message_chunk ?? 0;
  const slow = call(A.session.prompt, { sessionId, prompt: [{ type: "text", text: "slow" }] }, z.zPromptResponse);
  for (let i = 0; i < 500 && (result.kinds.agent_message_chunk ?? 0) === before; i++) await new Promise((r) => setTimeout(r, 10));
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  result.stopReasons.push((await slow).stopReason);

  await call(A.session.close, { sessionId }, z.zCloseSessionResponse);
  await call(A.session.delete, { sessionId }, z.zDeleteSessionResponse);
  try {
    await ctx.request(A.session.load, { sessionId, cwd, mcpServers: [] });
    result.problems.push("session/load of a deleted session succeeded");
  } catch (e) {
    result.loadDeletedCode = e.code;
  }
}

try {
  await app.connectWith(stream, main);
} catch (e) {
  result.problems.push(`client failed: ${e?.stack ?? e}`);
}
writeFileSync(outFile, JSON.stringify(result, null, 2));
process.exit(0);
