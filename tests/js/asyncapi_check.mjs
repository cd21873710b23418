import { readFileSync } from "node:fs";
import { Parser } from "@asyncapi/parser";
const parser = new Parser();
const text = readFileSync(process.argv[2], "utf8");
const { document, diagnostics } = await parser.parse(text);
const out = diagnostics.map((d) => ({ severity: d.severity, code: d.code, message: d.message, path: d.path }));
console.log(JSON.stringify({ parsed: document !== undefined, diagnostics: out }, null, 1));
