// The Vercel AI SDK's default OpenAI provider (the Responses API) against ticketproxy.
// Usage: node ai_sdk.mjs <scenario>, with TICKETPROXY_BASE_URL (…/v1) and
// TICKETPROXY_API_KEY in the environment. A tool's "execution" returns a fixed listing.
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const openai = createOpenAI({
  baseURL: process.env.TICKETPROXY_BASE_URL,
  apiKey: process.env.TICKETPROXY_API_KEY,
});
const model = openai("gpt-4o");
const ran = [];
const tools = {
  list_folder: tool({
    description: "List the files in a folder.",
    inputSchema: z.object({ folder: z.string() }),
    execute: async ({ folder }) => {
      ran.push(folder);
      return "README.md";
    },
  }),
};

const scenarios = {
  async "generate-text-tool"() {
    const result = await generateText({
      model,
      system: "Answer briefly.",
      prompt: "What files are in the workspace?",
      tools,
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    return {
      text: result.text,
      ran,
      steps: result.steps.length,
      finish_reason: result.finishReason,
    };
  },

  async "stream-text"() {
    const result = streamText({ model, prompt: "Say hello.", maxRetries: 0 });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    return { text, finish_reason: await result.finishReason };
  },

  async "generate-object"() {
    const result = await generateObject({
      model,
      schema: z.object({ name: z.string(), country: z.string() }),
      schemaName: "city",
      prompt: "Name a city.",
      maxRetries: 0,
    });
    return { object: result.object, finish_reason: result.finishReason };
  },
};

const scenario = scenarios[process.argv[2]];
if (!scenario) {
  console.error(`unknown scenario ${process.argv[2]}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
console.log(JSON.stringify(await scenario()));
