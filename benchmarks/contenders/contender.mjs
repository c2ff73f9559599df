// One contender of bench_contenders.py: Puppeteer (npm puppeteer-core, the repo's
// node_modules) in a process of its own; the same contract as contender.py:
//
//     node benchmarks/contenders/contender.mjs BROWSER_WS_URL TARGET_ID PAGE_URL [NAME]
//
// prints `ready`, then for each stdin line `OP K` does K operations back to back, each
// timed with process.hrtime, and prints one JSON line of K durations in seconds (or
// {"error": ...}); ends at `quit` or at the end of stdin.
//   rtt:    CDPSession.send('Runtime.evaluate', {expression: '1'}) on its own session
//   dialog: page.evaluate('alert("x"); 1'), the dialog accepted by page.on('dialog')
// NAME puppeteer-evaluate: rtt is page.evaluate('1') instead (what its users call, as
// sup.evaluate is cdpnb's).
import readline from 'node:readline';
import puppeteer from 'puppeteer-core';

const [browserWSEndpoint, targetId, pageUrl, name = 'puppeteer'] = process.argv.slice(2);
if (!pageUrl) {
  console.error('usage: contender.mjs BROWSER_WS_URL TARGET_ID PAGE_URL');
  process.exit(2);
}

// Puppeteer attaches to every page it is let see; the filter keeps it to its own page,
// as every other contender keeps to its own (a foreign dialog it would leave open, but
// it would still take in every page's events).
const browser = await puppeteer.connect({
  browserWSEndpoint,
  defaultViewport: null,
  targetFilter: (target) => target.type() !== 'page' || target.url() === pageUrl,
});
const page = (await browser.pages()).find((p) => p.url() === pageUrl);
if (!page) throw new Error(`no page ${targetId} at ${pageUrl}`);
const session = await page.createCDPSession();
page.on('dialog', (dialog) => { dialog.accept(); });

const ops = {
  rtt: name === 'puppeteer-evaluate'
    ? () => page.evaluate('1')
    : () => session.send('Runtime.evaluate', { expression: '1' }),
  dialog: () => page.evaluate('alert("x"); 1'),
};

console.log('ready');
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const [op, count] = line.trim().split(/\s+/);
  if (op === 'quit' || count === undefined) break;
  try {
    const call = ops[op];
    if (!call) throw new Error(`unknown operation ${op}`);
    const durations = [];
    for (let i = 0; i < Number(count); i++) {
      const started = process.hrtime.bigint();
      await call();
      durations.push(Number(process.hrtime.bigint() - started) / 1e9);
    }
    process.stdout.write(JSON.stringify(durations) + '\n');
  } catch (error) {
    process.stdout.write(JSON.stringify({ error: String(error).slice(0, 500) }) + '\n');
  }
}
await session.detach();
await browser.disconnect();
process.exit(0);
