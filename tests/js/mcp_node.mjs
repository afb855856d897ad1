// The TypeScript MCP SDK's client against ticketproxy's /mcp: one scenario per run, as JSON.
// Usage: node mcp_node.mjs <scenario>, with TICKETPROXY_BASE_URL (…/v1) and
// TICKETPROXY_API_KEY in the environment. Each request times out after 5 s unless a
// progress notification resets the clock, as clients with a short timeout are set up.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.TICKETPROXY_BASE_URL.replace(/\/v1$/, "") + "/mcp");
const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: { Authorization: `Bearer ${process.env.TICKETPROXY_API_KEY}` } },
});
const client = new Client({ name: "node-agent", version: "1.0.0" });
const TIMEOUT = 5_000;

const scenarios = {
  async "ask-long"() {
    const { tools } = await client.listTools();
    let progress = 0;
    const started = Date.now();
    const result = await client.callTool(
      { name: "ask_team", arguments: { question: "Which region do we deploy to?" } },
      undefined,
      {
        timeout: TIMEOUT,
        resetTimeoutOnProgress: true,
        onprogress: () => {
          progress += 1;
        },
      },
    );
    return {
      tools: tools.map((tool) => tool.name),
      waited: (Date.now() - started) / 1000,
      progress,
      result,
    };
  },
};

await client.connect(transport);
try {
  console.log(JSON.stringify(await scenarios[process.argv[2]]()));
} finally {
  await client.close();
}
