// A Session Query client written from docs/protocol.md alone, with the official nats.js
// packages. Run by tests/test_protocol_conformance.py against a real worker (NATS_URL);
// prints "ok <check>" per check and exits non-zero on the first failure.
import { createHash, randomUUID } from "node:crypto";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { Svcm } from "@nats-io/services";
import { Objm } from "@nats-io/obj";

const PREFIX = "sessionquery"; // §1
const CALLER = "s-pay-retry-docs"; // the sample corpus
const OWN_ROOT = "s-pay-refund-flake";
const FOREIGN = "s-web-static-migration";
const CODES = {
  SESSION_QUERY_INVALID_ARGUMENTS: "400",
  SESSION_QUERY_NO_IDENTITY: "401",
  SESSION_QUERY_NOT_FOUND: "404",
  SESSION_QUERY_GENERATION_CHANGED: "409",
  SESSION_QUERY_CANCELLED: "499",
  SESSION_QUERY_TOOL_FAILED: "500",
  SESSION_QUERY_OVERLOADED: "503",
  SESSION_QUERY_TIMEOUT: "504",
};

const nc = await connect({ servers: process.env.NATS_URL });
const enc = new TextEncoder();

function envelope(args, execution = {}) {
  // §3.1: deadline_ms is epoch milliseconds.
  return {
    request_id: "r-" + randomUUID().replaceAll("-", ""),
    execution: {
      agent: { session_id: CALLER, agent_id: "a-js" },
      deadline_ms: Date.now() + 30_000,
      ...execution,
    },
    arguments: args,
  };
}

async function call(tool, body) {
  const data = typeof body === "string" ? enc.encode(body) : enc.encode(JSON.stringify(body));
  const msg = await nc.request(`${PREFIX}.tool.${tool}`, data, { timeout: 35_000 });
  const reply = msg.json();
  // §3.3: ok or error; error headers on errors only.
  const code = msg.headers?.get("Nats-Service-Error-Code") ?? "";
  if (reply.status === "ok") {
    assert.equal(typeof reply.content, "string");
    assert.equal(code, "");
  } else {
    assert.equal(reply.status, "error");
    assert.equal(code, CODES[reply.error.code]);
    assert.equal(msg.headers.get("Nats-Service-Error"), reply.error.message.split(/\s+/).join(" ").slice(0, 512));
  }
  return reply;
}

function ok(name) {
  console.log(`ok ${name}`);
}

try {
  // §1.1 discovery with the services client.
  const svc = new Svcm(nc).client();
  const infos = [];
  for await (const info of await svc.info("session-query")) infos.push(info);
  assert.ok(infos.length >= 1);
  const info = infos[0];
  assert.equal(info.metadata.cancel, `${PREFIX}.cancel`);
  assert.equal(info.metadata.manifest_version, info.version);
  const search = info.endpoints.find((e) => e.name === "session_search");
  assert.equal(search.subject, `${PREFIX}.tool.session_search`);
  assert.equal(search.queue_group, "q");
  ok("discovery");

  // §2 manifest.
  const manifest = (await nc.request(info.metadata.manifest, new Uint8Array(), { timeout: 5000 })).json();
  assert.equal(manifest.version, info.version);
  assert.deepEqual(
    manifest.tools.map((t) => t.name),
    ["session_search", "session_event_search", "session_trace", "session_event_trace", "session_event_read"],
  );
  assert.equal(manifest.tools[0].input_schema.$schema, "https://json-schema.org/draft/2020-12/schema");
  ok("manifest");

  // §3 a search with the caller's current step.
  const body = envelope({ query: "flaky refund test" }, { step_start_seq: 8 });
  const found = await call("session_search", body);
  assert.equal(found.status, "ok");
  assert.equal(found.request_id, body.request_id);
  ok("search");

  // §4 the same NOT_FOUND for a foreign and a missing id.
  const foreign = await call("session_trace", envelope({ session_id: FOREIGN }));
  const missing = await call("session_trace", envelope({ session_id: "s-none" }));
  assert.equal(foreign.error.code, "SESSION_QUERY_NOT_FOUND");
  assert.equal(foreign.error.message.replace(FOREIGN, "<id>"), missing.error.message.replace("s-none", "<id>"));
  ok("not-found");

  // §3.3 an unreadable body: empty request_id.
  const unreadable = await call("session_event_read", "[]");
  assert.equal(unreadable.request_id, "");
  assert.equal(unreadable.error.code, "SESSION_QUERY_INVALID_ARGUMENTS");
  const seconds = await call("session_trace", envelope({}, { deadline_ms: Math.floor(Date.now() / 1000) }));
  assert.match(seconds.error.message, /epoch milliseconds/);
  ok("invalid");

  // §6 cancel (fire-and-forget) before the request: answered CANCELLED with the reason.
  const doomed = envelope({ session_id: OWN_ROOT });
  // §6.1: the cancel carries the request's own agent.
  nc.publish(
    `${PREFIX}.cancel`,
    JSON.stringify({ request_id: doomed.request_id, reason: "js: stop", agent: doomed.execution.agent }),
  );
  await nc.flush();
  await new Promise((r) => setTimeout(r, 200));
  const cancelled = await call("session_trace", doomed);
  assert.deepEqual(cancelled.error, {
    code: "SESSION_QUERY_CANCELLED",
    message: 'The request was cancelled by the runtime (reason: "js: stop")',
  });
  ok("cancel");

  // §5 a spilled read, fetched from the object store and verified.
  const read = await call("session_event_read", envelope({ session_id: OWN_ROOT, seq: 7 }));
  const spill = read.spill;
  assert.ok(spill, "expected a spilled reply");
  assert.match(spill.digest, /^SHA-256=[A-Za-z0-9_-]{43}=$/);
  assert.equal(spill.encryption.alg, "A256GCM");
  const os = await new Objm(nc).open(spill.bucket);
  const meta = await os.info(spill.name);
  assert.equal(meta.size, spill.size + 16); // §5.4: ciphertext || 16-byte tag
  const sealed = await os.getBlob(spill.name);
  const key = await crypto.subtle.importKey(
    "raw", Buffer.from(spill.encryption.key, "base64url"), { name: "AES-GCM" }, false, ["decrypt"]);
  const bytes = new Uint8Array(await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: Buffer.from(spill.encryption.nonce, "base64url"), tagLength: 128 },
    key, sealed));
  assert.equal(bytes.length, spill.size);
  // base64url in node has no padding; a 32-byte digest takes one "=".
  const digest = "SHA-256=" + createHash("sha256").update(bytes).digest("base64url") + "=";
  assert.equal(digest, spill.digest);
  assert.ok(new TextDecoder().decode(bytes).includes('"seq":7'));
  ok("spill");
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await nc.close();
}
