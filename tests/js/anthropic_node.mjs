// The node `@anthropic-ai/sdk` against ticketproxy's Messages API: one scenario per run.
// Usage: node anthropic_node.mjs <scenario>, with TICKETPROXY_BASE_URL (the proxy's root,
// without /v1: the SDK adds /v1/messages) and TICKETPROXY_API_KEY in the environment.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({
  baseURL: process.env.TICKETPROXY_BASE_URL,
  apiKey: process.env.TICKETPROXY_API_KEY,
  maxRetries: 0,
  timeout: 30_000,
});
const MODEL = "claude-sonnet-4-5";
const TOOLS = [
  {
    name: "list_folder",
    description: "List the files in a folder.",
    input_schema: {
      type: "object",
      properties: { folder: { type: "string" } },
      required: ["folder"],
    },
  },
];
const QUESTION = { role: "user", content: "What files are in the workspace?" };

const scenarios = {
  async "messages-tool"() {
    const first = await client.messages.create({
      model: MODEL,
      max_tokens: 1024,
      system: "Answer briefly.",
      messages: [QUESTION],
      tools: TOOLS,
    });
    const uses = first.content.filter((block) => block.type === "tool_use");
    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 1024,
      system: "Answer briefly.",
      messages: [
        QUESTION,
        { role: "assistant", content: first.content },
        {
          role: "user",
          content: uses.map((use) => ({
            type: "tool_result",
            tool_use_id: use.id,
            content: "README.md",
          })),
        },
      ],
      tools: TOOLS,
    });
    return {
      stop_reason: first.stop_reason,
      uses: uses.map((use) => ({ name: use.name, input: use.input })),
      final: second.content.map((block) => block.text).join(""),
      final_stop_reason: second.stop_reason,
    };
  },

  async "messages-stream"() {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: "user", content: "Say hello." }],
    });
    const types = [];
    let text = "";
    stream.on("streamEvent", (event) => types.push(event.type));
    stream.on("text", (delta) => {
      text += delta;
    });
    const message = await stream.finalMessage();
    return { types, text, stop_reason: message.stop_reason, id: message.id };
  },
};

const scenario = scenarios[process.argv[2]];
if (!scenario) {
  console.error(`unknown scenario ${process.argv[2]}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
console.log(JSON.stringify(await scenario()));
