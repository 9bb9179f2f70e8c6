// The FAANG and support flows, and a run's breakpoint and metadata, as a LangGraph user writes them with the JS SDK
// (@langchain/langgraph-sdk, unchanged), against the gateway's LangGraph door.
// node langgraph_js_flows.cjs URL API_KEY -> one JSON object on stdout (tests/test_langgraph_js.py)
const { Client } = require("@langchain/langgraph-sdk");

const [url, apiKey] = process.argv.slice(2);
const client = new Client({ apiUrl: url, apiKey });
const human = (text) => ({ messages: [{ role: "user", content: text }] });

async function faang() {
  const thread = await client.threads.create({ graphId: "faang" });
  const events = [];
  for await (const part of client.runs.stream(thread.thread_id, "faang", {
    input: human("what's the combined headcount of the FAANG companies in 2024?"),
    streamMode: ["values", "updates", "messages-tuple"],
  })) {
    events.push([part.event, part.data]);
  }
  return { thread: thread.thread_id, events, runs: await client.runs.list(thread.thread_id) };
}

async function support() {
  const thread = await client.threads.create({ graphId: "support" });
  const id = thread.thread_id;
  const asked = await client.runs.wait(id, "support", {
    input: human("My boots fell apart after a week. I want my money back."),
  });
  const approval = await client.runs.wait(id, "support", { command: { resume: "Order 4711" } });
  let unclear = null;
  try {
    await client.runs.wait(id, "support", { command: { resume: "maybe" } });
  } catch (err) {
    unclear = err.status ?? String(err);
  }
  const done = await client.runs.wait(id, "support", { command: { resume: { decisions: [{ type: "approve" }] } } });
  const copied = await client.threads.copy(id);
  return { thread: id, asked, approval, unclear, done, state: await client.threads.getState(id), copied };
}

async function breakpoints() {
  const thread = await client.threads.create({ graphId: "faang", metadata: { user: "ada" } });
  const id = thread.thread_id;
  const paused = await client.runs.wait(id, "faang", {
    input: human("what's the combined headcount of the FAANG companies in 2024?"),
    interruptBefore: ["math_expert"],
    metadata: { source: "js" },
  });
  const state = await client.threads.getState(id);
  const done = await client.runs.wait(id, "faang", { input: null });
  const updated = await client.threads.update(id, { metadata: { stage: "answered" } });
  return { paused, state, done, updated, run: await client.runs.get(id, "t1") };
}

(async () => {
  const assistants = await client.assistants.search();
  const out = { assistants, faang: await faang(), support: await support(), breakpoints: await breakpoints() };
  process.stdout.write(JSON.stringify(out));
})().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(1);
});
