// The Vercel AI SDK's default OpenAI provider (the Responses API) against ticketproxy.
// Usage: node ai_sdk.mjs <scenario>, with TICKETPROXY_BASE_URL (…/v1) and
// TICKETPROXY_API_KEY in the environment. A tool's "execution" returns a fixed listing.
import { createOpenAI } from "@ai-sdk/openai";
import { Output, generateObject, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const openai = createOpenAI({
  baseURL: process.env.TICKETPROXY_BASE_URL,
  apiKey: process.env.TICKETPROXY_API_KEY,
});
const model = openai("gpt-4o");
const QUESTION = "What files are in the workspace?";
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
      prompt: QUESTION,
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

  async "stream-text-tool"() {
    const result = streamText({
      model,
      prompt: QUESTION,
      tools,
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    const steps = await result.steps;
    return { text, ran, steps: steps.length, finish_reason: await result.finishReason };
  },

  // A reasoning model (system prompt as a developer message, `reasoning` and `include`
  // sent) with store off: the earlier answer comes back as a message, not a reference.
  async "reasoning-store-false"() {
    const result = await generateText({
      model: openai("gpt-5-mini"),
      system: "Answer briefly.",
      prompt: QUESTION,
      tools,
      stopWhen: stepCountIs(3),
      maxRetries: 0,
      providerOptions: {
        openai: { store: false, reasoningEffort: "low", reasoningSummary: "auto", user: "ada" },
      },
    });
    return { text: result.text, ran, steps: result.steps.length };
  },

  async "output-object"() {
    const result = await generateText({
      model,
      output: Output.object({ schema: z.object({ name: z.string(), country: z.string() }) }),
      prompt: "Name a city.",
      maxRetries: 0,
    });
    return { object: result.output, finish_reason: result.finishReason };
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
