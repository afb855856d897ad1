// The node `openai` package against ticketproxy: one scenario per run, its result as JSON.
// Usage: node openai_node.mjs <scenario>, with TICKETPROXY_BASE_URL (…/v1) and
// TICKETPROXY_API_KEY in the environment. A tool's "execution" returns a fixed listing.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.TICKETPROXY_BASE_URL,
  apiKey: process.env.TICKETPROXY_API_KEY,
  maxRetries: 0,
  timeout: 30_000,
});
const MODEL = "gpt-4o";
const LISTING = "README.md";
const CHAT_TOOLS = [
  {
    type: "function",
    function: {
      name: "list_folder",
      description: "List the files in a folder.",
      parameters: {
        type: "object",
        properties: { folder: { type: "string" } },
        required: ["folder"],
      },
    },
  },
];
const RESPONSE_TOOLS = [{ type: "function", strict: true, ...CHAT_TOOLS[0].function }];
RESPONSE_TOOLS[0].parameters = { ...RESPONSE_TOOLS[0].parameters, additionalProperties: false };
const QUESTION = "What files are in the workspace?";

const scenarios = {
  async "chat-json"() {
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "What is 2+2?" }],
    });
    const [choice] = completion.choices;
    return { content: choice.message.content, finish_reason: choice.finish_reason };
  },

  async "chat-stream"() {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Say hello." }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        content += choice.delta.content ?? "";
        finish = choice.finish_reason ?? finish;
      }
      usage = chunk.usage ?? usage;
    }
    return { content, finish_reason: finish, usage };
  },

  async "chat-tool"() {
    const messages = [{ role: "user", content: QUESTION }];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS });
    const asked = first.choices[0].message;
    messages.push(asked);
    for (const call of asked.tool_calls ?? []) {
      messages.push({ role: "tool", tool_call_id: call.id, content: LISTING });
    }
    const second = await client.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS });
    return {
      finish_reason: first.choices[0].finish_reason,
      calls: (asked.tool_calls ?? []).map((c) => ({
        name: c.function.name,
        arguments: JSON.parse(c.function.arguments),
      })),
      final: second.choices[0].message.content,
    };
  },

  async "responses-json"() {
    const response = await client.responses.create({
      model: MODEL,
      instructions: "Be brief.",
      input: "What is 2+2?",
    });
    return { id: response.id, status: response.status, output_text: response.output_text };
  },

  async "responses-stream"() {
    const stream = await client.responses.create({
      model: MODEL,
      input: "Say hello.",
      stream: true,
    });
    const types = [];
    let text = "";
    let final = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed") final = event.response;
    }
    // Streamed events are not post-processed: read the text from the final output items.
    const finalText = (final?.output ?? [])
      .filter((item) => item.type === "message")
      .flatMap((item) => item.content)
      .map((part) => part.text)
      .join("");
    return { types, text, status: final?.status, final_text: finalText };
  },

  async "responses-tool"() {
    const first = await client.responses.create({
      model: MODEL,
      input: QUESTION,
      tools: RESPONSE_TOOLS,
    });
    const calls = first.output.filter((item) => item.type === "function_call");
    const second = await client.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: calls.map((call) => ({
        type: "function_call_output",
        call_id: call.call_id,
        output: LISTING,
      })),
      tools: RESPONSE_TOOLS,
    });
    const stored = await client.responses.retrieve(second.id);
    return {
      calls: calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) })),
      final: second.output_text,
      stored_status: stored.status,
    };
  },
};

const scenario = scenarios[process.argv[2]];
if (!scenario) {
  console.error(`unknown scenario ${process.argv[2]}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
console.log(JSON.stringify(await scenario()));
