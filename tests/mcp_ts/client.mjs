// Drives `undostore mcp` with the official MCP TypeScript SDK client, as a host does:
//   node client.mjs ROOT PYTHON
// prints one JSON object with what it saw (tests/test_mcp_ts.py checks it).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [root, python] = process.argv.slice(2);
const env = {};
for (const [key, value] of Object.entries(process.env)) {
  // WATCHMAN_SOCK too: the test's own (or no) watchman daemon, never the tester's.
  if (key.startsWith("UNDOSTORE_") || key === "XDG_CONFIG_HOME" || key === "WATCHMAN_SOCK") {
    env[key] = value;
  }
}
// A host passes only HOME, LOGNAME, PATH, SHELL, TERM, USER unless its config has `env`:
// this is that `env`, merged over the SDK's defaults as hosts do.
const transport = new StdioClientTransport({
  command: python, args: ["-m", "undostore", "mcp"], cwd: root, env: { ...env,
    HOME: process.env.HOME, PATH: process.env.PATH }, stderr: "pipe",
});
const client = new Client({ name: "undostore-test", version: "1.0.0" });
await client.connect(transport);

const out = {};
const text = (result) => JSON.parse(result.content.find((c) => c.type === "text").text);
const tools = (await client.listTools()).tools;
out.tools = Object.fromEntries(tools.map((t) => [t.name, t.annotations || {}]));

const first = text(await client.callTool({ name: "snapshot", arguments: { session: "s" } }));
for (let i = 0; i < 300; i += 2) writeFileSync(join(root, `f${i}.txt`), "changed\n");
const progress = [];
const undone = await client.callTool({ name: "undo", arguments: { session: "s" } }, undefined,
  { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true });
out.undo = text(undone);
out.progress = progress;

// A result whose JSON would be ~25 MB (an 11 MB file, in the patch and in the JSON twice): the
// client must stay connected, and get a summary.
const lines = [];
for (let i = 0; i < 450000; i++) lines.push(`line ${i} of a big file`);
writeFileSync(join(root, "big.txt"), lines.join("\n") + "\n");
const big = await client.callTool({ name: "diff", arguments: { from: first.id, format: "patch" } });
out.big = { ...text(big), text: undefined, sent: JSON.stringify(big).length };
out.after = text(await client.callTool({ name: "status", arguments: { session: "s" } }));
out.error = await client.callTool({ name: "redo", arguments: { session: "nobody" } });
await client.close();
console.log(JSON.stringify(out));
