// Fetch and decrypt one spilled result with only @nats-io/obj and WebCrypto, as a
// JavaScript requester would (docs/spill.md). Arguments: NATS URL, then the locator as
// JSON, then the output path. Prints {"size": n, "digest": "SHA-256=..."}.
import { writeFile } from "node:fs/promises";
import { connect } from "@nats-io/transport-node";
import { Objm } from "@nats-io/obj";

const [url, locatorJson, outPath] = process.argv.slice(2);
const locator = JSON.parse(locatorJson);

function fromBase64url(text) {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function toBase64url(bytes) {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_");
}

const nc = await connect({ servers: url });
try {
  const store = await new Objm(nc).open(locator.bucket);
  const result = await store.get(locator.name);
  const parts = [];
  for await (const chunk of result.data) parts.push(chunk);
  const failed = await result.error;
  if (failed) throw failed;
  const sealed = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    sealed.set(p, offset);
    offset += p.length;
  }
  if (locator.encryption.alg !== "A256GCM") throw new Error("unknown algorithm");
  const key = await crypto.subtle.importKey(
    "raw", fromBase64url(locator.encryption.key), { name: "AES-GCM" }, false, ["decrypt"]
  );
  // The object is the ciphertext with the 16-byte tag at its end, exactly what
  // AES-GCM decrypt takes; no additional data.
  const plain = new Uint8Array(await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64url(locator.encryption.nonce), tagLength: 128 },
    key,
    sealed,
  ));
  const digest = "SHA-256=" + toBase64url(new Uint8Array(await crypto.subtle.digest("SHA-256", plain)));
  if (digest !== locator.digest) throw new Error("digest mismatch");
  await writeFile(outPath, plain);
  console.log(JSON.stringify({ size: plain.length, digest }));
} finally {
  await nc.close();
}
